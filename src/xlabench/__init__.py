"""xlabench: trustworthy throughput numbers for vision models, with and without graph compilers."""

__version__ = "0.1.0"
