"""The one progress type: sub-tasks map their 0-1 onto a slice of the parent's."""

from orientscope.core.progress import quiet, scaled


def test_scaled_maps_onto_the_parent_slice_and_names_the_stage():
    heard = []

    def parent(fraction, message, stage=""):
        heard.append((round(fraction, 6), message, stage))

    child = scaled(parent, 0.2, 0.6, stage="load")
    child(0.0, "start")
    child(0.5, "half", "ignored")
    grandchild = scaled(child, 0.5, 1.0, prefix="npz: ")
    grandchild(1.0, "done")
    assert heard == [(0.2, "start", "load"), (0.4, "half", "load"), (0.6, "npz: done", "load")]
    kept = scaled(parent, 0.0, 1.0)
    kept(0.25, "x", "frames")
    assert heard[-1] == (0.25, "x", "frames")


def test_no_parent_reports_nothing():
    assert scaled(None, 0.0, 1.0) is quiet
    assert quiet(0.5, "anything", "stage") is None
