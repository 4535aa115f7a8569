# vlmlens: the two commands a new user needs are `make demo` and `make test`.
PYTHON ?= python
PIP ?= $(PYTHON) -m pip

.PHONY: install fonts tex browser demo test export readme check-sync nbtest pytest bench

# Noto fonts draw Devanagari, Telugu, Tamil, Arabic and CJK text in figures (DejaVu alone draws boxes).
SUDO ?= $(shell [ "$$(id -u)" = 0 ] || echo sudo)
fonts:
	@if command -v apt-get >/dev/null 2>&1; then fc-list 2>/dev/null | grep -q "Noto Sans Devanagari" || \
	  $(SUDO) apt-get install -y -q fonts-noto-core fonts-noto-cjk >/dev/null 2>&1 || \
	  ($(SUDO) apt-get update -q >/dev/null && $(SUDO) apt-get install -y -q fonts-noto-core fonts-noto-cjk >/dev/null); \
	else echo "install the Noto fonts (Devanagari, Telugu, Tamil, Arabic, CJK) so that figures render those scripts"; fi

# TeX Live (pdfLaTeX + booktabs, XeLaTeX + fontspec): the tests compile every table a report emits. ~2.5 min on apt.
# poppler-utils' pdffonts lists the fonts of a compiled paper (the paper check reports Type 3 fonts).
TEX_PACKAGES = texlive-latex-base texlive-latex-recommended texlive-xetex texlive-fonts-recommended poppler-utils
tex:
	@if command -v apt-get >/dev/null 2>&1; then (command -v pdflatex >/dev/null && command -v xelatex >/dev/null && command -v pdffonts >/dev/null) || \
	  $(SUDO) apt-get install -y -q --no-install-recommends $(TEX_PACKAGES) >/dev/null 2>&1 || \
	  ($(SUDO) apt-get update -q >/dev/null && $(SUDO) apt-get install -y -q --no-install-recommends $(TEX_PACKAGES) >/dev/null); \
	else echo "install pdflatex and xelatex (TeX Live) so that the tests compile the emitted tables"; fi

# Debian's Chromium and its driver: the tests open `vlmlens view`'s page in headless Chromium (Selenium drives it).
BROWSER_PACKAGES = chromium chromium-driver
browser:
	@if command -v apt-get >/dev/null 2>&1; then (command -v chromium >/dev/null && command -v chromedriver >/dev/null) || \
	  $(SUDO) apt-get install -y -q --no-install-recommends $(BROWSER_PACKAGES) >/dev/null 2>&1 || \
	  ($(SUDO) apt-get update -q >/dev/null && $(SUDO) apt-get install -y -q --no-install-recommends $(BROWSER_PACKAGES) >/dev/null); \
	else echo "install Chromium and chromedriver (/usr/bin/chromium, /usr/bin/chromedriver) so that the tests open the results viewer"; fi

install: fonts tex browser
	$(PIP) install "torch==2.14.1" "torchvision==0.29.1"
	$(PIP) install -e ".[dev]"

# The demo needs only the local-model extra: torch's CPU wheel (no CUDA libraries), transformers, qwen-vl-utils.
# No TeX, Chromium or fonts. A torch already installed (a CUDA build included) satisfies the pin and is kept.
demo:
	$(PIP) install "torch==2.14.1" "torchvision==0.29.1" --index-url https://download.pytorch.org/whl/cpu
	$(PIP) install -e ".[hf]"
	vlmlens demo

export:
	nbdev_export

# README.md is written from nbs/index.ipynb (settings.ini readme_nb), as nbdev_readme does where Quarto exists.
readme:
	$(PYTHON) tools/readme.py

# CI fails when the exported package differs from the notebooks, or README.md from the front-page notebook.
check-sync: export
	@if [ -n "$$(git status --porcelain -- vlmlens)" ]; then \
	  echo "vlmlens/ is out of sync with nbs/ (run nbdev_export and commit):"; git status --porcelain -- vlmlens; exit 1; fi
	@$(PYTHON) tools/readme.py --check

nbtest:
	nbdev_test --n_workers 2 --timing

pytest:
	$(PYTHON) -m pytest -q tests

test: install check-sync nbtest pytest

bench:
	$(PYTHON) benchmarks/frames.py
