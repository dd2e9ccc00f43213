"""OrientScope backend: loaders, science core, store, pipeline, services, API and CLI."""

__version__ = "0.1.0"
