"""Kubernetes packaging of ksmon: the manifests' generator and the image build helpers."""
