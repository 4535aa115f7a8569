"""Packaging for vlmlens (nbdev 2 layout): everything is read from settings.ini."""
from configparser import ConfigParser
from pathlib import Path

import setuptools

cfg_all = ConfigParser()
cfg_all.read(Path(__file__).parent / "settings.ini")
cfg = cfg_all["DEFAULT"]

requirements = cfg.get("requirements", "").split()
# Optional extras: `pip install vlmlens[hf]` local models, `[report]` notebooks/plots/sweeps, `[curation]` building
# benchmarks, `[scale]` Ray/Slurm executors, `[data]` the download clients of `vlmlens data`; `[all]` all of them; `[dev]` all of them plus the test tools.
extras = {name: cfg.get(f"{name}_requirements", "").split() for name in ("hf", "report", "curation", "scale", "data")}
extras["all"] = sorted({r for reqs in extras.values() for r in reqs})
extras["dev"] = extras["all"] + cfg.get("dev_requirements", "").split()
console_scripts = [s for s in cfg.get("console_scripts", "").split() if s]
readme = Path(__file__).parent / "README.md"

setuptools.setup(
    name=cfg["lib_name"],
    version=cfg["version"],
    description=cfg["description"],
    long_description=readme.read_text(encoding="utf-8") if readme.exists() else "",
    long_description_content_type="text/markdown",
    author=cfg["author"],
    author_email=cfg["author_email"],
    license="Apache-2.0",
    url=cfg["git_url"],
    packages=setuptools.find_packages(include=["vlmlens", "vlmlens.*"]),
    include_package_data=True,
    package_data={"vlmlens": ["assets/*.json", "assets/**/*.json", "assets/view/*", "assets/prompts/*/*.txt"]},
    python_requires=">=" + cfg["min_python"],
    install_requires=requirements,
    extras_require=extras,
    entry_points={"console_scripts": console_scripts, "nbdev": [f"{cfg['lib_path']}={cfg['lib_path']}._modidx:d"]},
    zip_safe=False,
)
