"""The ordered list of pipeline stages. Later stages may read earlier ones."""

from orientscope.pipeline.stages import chemistry, frames, models, statistics

STAGES = [frames.STAGE, statistics.STAGE, chemistry.STAGE, models.STAGE]
STAGE_NAMES = [s.name for s in STAGES]


def stage_by_name(name: str):
    for stage in STAGES:
        if stage.name == name:
            return stage
    raise ValueError(f"unknown stage {name!r}; expected one of {STAGE_NAMES}")
