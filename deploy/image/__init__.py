"""The container image: its Dockerfile, entrypoint and the build steps tests can run."""
