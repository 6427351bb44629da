"""One options record per judge backend (issue 21, build 4): the command line and the window
build the same record for the same choices, an option a backend does not know is refused by
name, and each default is written once, in models/options.py."""

from __future__ import annotations

import ast
import dataclasses
import shutil
from pathlib import Path

import pytest

from checkout import plant
from helpers import good_bad_items
from pairscope.app.cli.judge import options_from_args
from pairscope.app.cli.main import build_parser, main
from pairscope.app.store import Store
from pairscope.models.base import OptionError, backend_options, create_backend
from pairscope.models.options import OpenAIOptions, TransformersOptions
from test_architecture import ROOT, python_files

ENDPOINT = "http://127.0.0.1:9/v1"


@pytest.mark.parametrize(
    "backend, choices, misspelt, known",
    [
        ("openai", {"endpoint": ENDPOINT, "model": "m", "concurency": 4}, "concurency", "concurrency"),
        ("transformers", {"model": "folder", "dytpe": "bfloat16"}, "dytpe", "dtype"),
        ("transformers", {"model_path": "folder"}, "model_path", "model"),
    ],
)
def test_a_misspelt_option_is_refused_naming_the_backends_own(backend, choices, misspelt, known):
    with pytest.raises(OptionError) as error:
        create_backend(backend, **choices)
    message = str(error.value)
    assert f"the {backend} judge backend has no option {misspelt!r}" in message
    assert known in message.partition("its options: ")[2].split(", ")


def test_a_required_option_left_out_is_named():
    with pytest.raises(OptionError, match="the openai judge backend needs the option 'endpoint'"):
        backend_options("openai", model="m")


@pytest.fixture
def project(tmp_path):
    path = tmp_path / "p.pairscope"
    with Store.create(path) as store:
        store.add_items(good_bad_items(2))
    return path


@pytest.mark.parametrize(
    "flags, message",
    [
        (
            ["--backend", "openai", "--endpoint", ENDPOINT, "--device", "cuda"],
            "--device does not apply to --backend openai",
        ),
        (["--concurrency", "4"], "--concurrency does not apply to --backend transformers"),
        (["--backend", "openai"], "--backend openai needs --endpoint"),
    ],
)
def test_the_command_line_refuses_a_flag_its_backend_does_not_take(project, capsys, flags, message):
    assert main(["judge", "--db", str(project), "--model", "m", *flags]) == 1
    err = capsys.readouterr().err
    assert f"error: {message}" in err and "Traceback" not in err


def judge_args(*flags: str):
    return build_parser().parse_args(["judge", "--db", "p.pairscope", *flags])


def test_the_window_and_the_command_line_build_equal_records(qtbot, project):
    from pairscope.app.gui.controller import AnnotationController
    from pairscope.app.gui.judge_worker import options_from_panel
    from pairscope.app.gui.main_window import MainWindow

    window = MainWindow(AnnotationController(Store.open(project), "ann"))
    qtbot.addWidget(window)
    panel = window.judge.panel
    panel.model.setText("/models/qwen2-vl")
    local = options_from_panel(panel.settings())
    assert local == options_from_args(judge_args("--model", "/models/qwen2-vl"))
    assert local == TransformersOptions(model="/models/qwen2-vl")

    panel.backend.setCurrentIndex(panel.backend.findData("openai"))
    panel.model.setText("qwen2.5-vl-7b")
    panel.endpoint.setText(ENDPOINT)
    served = options_from_panel(panel.settings())  # no key variable, the default concurrency
    assert served == options_from_args(
        judge_args("--backend", "openai", "--endpoint", ENDPOINT, "--model", "qwen2.5-vl-7b")
    )
    assert served == OpenAIOptions(model="qwen2.5-vl-7b", endpoint=ENDPOINT)
    panel.api_key_env.setText("VLLM_KEY")
    panel.concurrency.setValue(64)
    flags = ("--backend", "openai", "--endpoint", ENDPOINT, "--model", "qwen2.5-vl-7b")
    assert options_from_panel(panel.settings()) == options_from_args(
        judge_args(*flags, "--api-key-env", "VLLM_KEY", "--concurrency", "64")
    )
    window.close()


# -- each default written once ---------------------------------------------------------------

RECORDS = (TransformersOptions, OpenAIOptions)
#: The run's own batch (JudgeConfig.batch_size: prompts per backend call) is a session setting
#: of the same name as the transformers backend's, not a backend option.
NOT_BACKEND_OPTIONS = {("app/judge/session.py", "batch_size")}


def defaults() -> dict[str, set[object]]:
    """Option name → the defaults the records give it."""
    found: dict[str, set[object]] = {}
    for record in RECORDS:
        for f in dataclasses.fields(record):
            if f.default is not dataclasses.MISSING and f.default is not None:
                found.setdefault(f.name, set()).add(f.default)
    return found


def _same(node: ast.AST, values: set[object]) -> bool:
    return isinstance(node, ast.Constant) and any(type(node.value) is type(v) and node.value == v for v in values)


def _names(node: ast.AST) -> set[str]:
    """The option names a call, a definition or an assignment is about: keyword and parameter
    names, string arguments (``"--api-key-env"``, ``settings.get("concurrency", …)``), targets."""
    names: set[str] = set()
    if isinstance(node, ast.Call):
        names |= {k.arg for k in node.keywords if k.arg}
        names |= {
            a.value.lstrip("-").replace("-", "_")
            for a in node.args
            if isinstance(a, ast.Constant) and isinstance(a.value, str)
        }
    elif isinstance(node, (ast.Assign, ast.AnnAssign)):
        for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
            names |= {
                n.attr if isinstance(n, ast.Attribute) else n.id
                for n in [target]
                if isinstance(n, (ast.Attribute, ast.Name))
            }
    return names


def rewritten_defaults(root: Path = ROOT, skip: tuple[str, ...] = ("models/options.py",)) -> list[str]:
    """``file:line option=value`` wherever app/, widgets/ or models/ (but the records) writes a
    backend option's default again: a parameter default, a keyword or a ``.get`` fallback,
    an argparse default, a widget's initial value assigned to a field of that name."""
    table = defaults()
    found = []
    for folder in ("app", "widgets", "models"):
        for path in python_files(folder, root=root):
            rel = str(path.relative_to(root))
            if rel in skip:
                continue
            for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
                hits: list[tuple[str, ast.AST]] = []
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    args = node.args.args + node.args.kwonlyargs
                    values = [None] * (len(node.args.args) - len(node.args.defaults)) + node.args.defaults
                    values += node.args.kw_defaults
                    hits += [(a.arg, v) for a, v in zip(args, values, strict=True) if v is not None]
                elif isinstance(node, ast.AnnAssign) and node.value is not None:
                    hits += [(name, node.value) for name in _names(node)]
                elif isinstance(node, (ast.Call, ast.Assign)):
                    call = node if isinstance(node, ast.Call) else node.value
                    if isinstance(call, ast.Call):
                        constants = [*call.args, *(k.value for k in call.keywords)]
                        for name in _names(node) | _names(call):
                            hits += [(name, c) for c in constants]
                for name, value in hits:
                    if name in table and (rel, name) not in NOT_BACKEND_OPTIONS and _same(value, table[name]):
                        found.append(f"{rel}:{value.lineno} {name}={ast.unparse(value)}")
    return sorted(set(found))


def test_each_backend_default_is_written_once():
    assert rewritten_defaults() == []


def test_rewritten_defaults_are_found_where_they_were(tmp_path):
    """The places the defaults were written before: the argparse flags, the window's worker,
    the judge panel's spin box and each backend's signature."""
    planted = {
        "app/cli_plant.py": (
            "def flags(p):\n"
            '    p.add_argument("--concurrency", type=int, default=8)\n'
            '    p.add_argument("--device", default="auto", help="where")\n'
            "    p.add_argument('--frames', type=int, default=8)\n"  # a session option: not counted
        ),
        "app/gui/worker_plant.py": (
            'def load(settings):\n    return dict(concurrency=int(settings.get("concurrency", 8)), timeout=120.0)\n'
        ),
        "widgets/panel_plant.py": (
            "class Panel:\n"
            "    def __init__(self, QSpinBox):\n"
            "        self.concurrency = QSpinBox(minimum=1, maximum=256, value=8)\n"
        ),
        "models/backend_plant.py": (
            "class Backend:\n"
            "    def __init__(self, model, retries: int = 4, *, top_logprobs: int = 5, **_ignored):\n"
            "        pass\n"
        ),
    }
    for folder in ("app", "widgets", "models"):
        shutil.copytree(ROOT / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__"))
    plant(tmp_path, planted)
    assert rewritten_defaults(tmp_path) == [
        "app/cli_plant.py:2 concurrency=8",
        "app/cli_plant.py:3 device='auto'",
        "app/gui/worker_plant.py:2 concurrency=8",
        "app/gui/worker_plant.py:2 timeout=120.0",
        "models/backend_plant.py:2 retries=4",
        "models/backend_plant.py:2 top_logprobs=5",
        "widgets/panel_plant.py:3 concurrency=8",
    ]
