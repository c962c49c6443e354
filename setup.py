"""Package list for setuptools (everything else is in pyproject.toml).

The Scapy layers live beside the library, in dissectors/, and install as the
subpackage ibwire.dissectors (regular and editable installs alike)."""

from setuptools import find_packages, setup

setup(
    packages=[*find_packages(include=["ibwire", "ibwire.*"]), "ibwire.dissectors"],
    package_dir={"ibwire.dissectors": "dissectors"},
)
