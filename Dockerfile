# Multi-stage build: the first stage builds OrientScope's wheel (the one import package `orientscope`,
# with its browser assets as package data) and installs it with its dependencies into a virtual
# environment; the runtime image carries only that environment, no source tree, and runs as non-root.
FROM python:3.11-slim AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
RUN python -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH
COPY pyproject.toml setup.py README.md ./
COPY backend ./backend
COPY app ./app
COPY frontend_assets ./frontend_assets
RUN pip install --upgrade pip \
    && pip wheel --no-deps --wheel-dir /wheels . \
    && pip install /wheels/orientscope-*.whl

FROM python:3.11-slim AS runtime
RUN useradd --create-home --uid 10001 orientscope \
    && mkdir /data && chown orientscope /data
COPY --from=build /opt/venv /opt/venv
WORKDIR /home/orientscope
ENV PATH=/opt/venv/bin:$PATH \
    ORIENTSCOPE_DATA_DIR=/data \
    PYTHONUNBUFFERED=1
USER orientscope
VOLUME ["/data"]
EXPOSE 8050
HEALTHCHECK --interval=30s --timeout=5s --start-period=120s \
    CMD python -c "import urllib.request,sys; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8050/api/health').status == 200 else 1)"
# Read-only by default: a container listens on 0.0.0.0, and anonymous writes there are refused.
# For uploads, run "orientscope serve --host 0.0.0.0 --port 8050" with -e ORIENTSCOPE_TOKEN.
CMD ["orientscope", "serve", "--read-only", "--host", "0.0.0.0", "--port", "8050"]
