import os
import re

from conftest import REPO

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib


def _name(req):
    return re.split(r"[<>=\[; ]", req.strip(), maxsplit=1)[0].lower()


def test_environment_yml_matches_pyproject():
    with open(os.path.join(REPO, "pyproject.toml"), "rb") as f:
        project = tomllib.load(f)["project"]
    wanted = {_name(r): r for r in project["dependencies"] + project["optional-dependencies"]["test"]}
    listed = {}
    text = open(os.path.join(REPO, "environment.yml")).read().split("dependencies:", 1)[1]
    for line in text.splitlines():
        m = re.match(r"\s+- (?!-e)([A-Za-z][\w.-]*[^:]*)$", line)
        if m and _name(m.group(1)) not in ("python", "pip"):
            listed[_name(m.group(1))] = m.group(1).strip()
    assert set(listed) == set(wanted)
    for name in ("numpy",):  # the pin that matters must be the same on both sides
        assert "<2.5" in listed[name] and "<2.5" in wanted[name]


def test_readme_commands_and_ci_agree():
    readme = open(os.path.join(REPO, "README.md")).read()
    ci = open(os.path.join(REPO, ".ci", "run")).read()
    test_cmd = 'pip install -e ".[test]" && pytest'
    assert test_cmd in readme and test_cmd in ci
    assert "jupyter lab notebooks/" in readme
