"""`import cuda.tile` resolving to tileworkbench: opt-in, and never silently over a real cuTile.

Each case runs in a fresh interpreter (the alias changes the import system of its process)."""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

PROGRAM = textwrap.dedent("""
    import numpy as np
    import cuda.tile as ct
    import tileworkbench.tile
    from cuda.tile import _exception
    from cuda.tile._exception import TileTypeError

    @ct.kernel
    def double(x, T: ct.Constant[int]):
        ct.store(x, (0,), ct.load(x, (0,), (T,)) * 2)

    x = np.arange(4, dtype=np.float32)
    ct.launch(None, (1,), double, (x, 4))
    print(ct.__name__, ct.kernel is tileworkbench.tile.kernel, TileTypeError.__module__, x.tolist())
""")


def run_python(args, tmp_path, *, fake_cutile=False, env=None):
    """Run Python with this checkout first on the path (and, if asked, a fake real cuTile next)."""
    paths = [str(ROOT)]
    if fake_cutile:
        package = tmp_path / "site" / "cuda" / "tile"
        package.mkdir(parents=True)
        (package / "__init__.py").write_text("REAL_CUTILE = True\n")
        paths.append(str(tmp_path / "site"))
    environment = {k: v for k, v in os.environ.items() if k != "TILEWORKBENCH_CUTILE_ALIAS"}
    inherited = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]   # where torch may be
    environment.update({"PYTHONPATH": os.pathsep.join(paths + inherited), **(env or {})})
    return subprocess.run([sys.executable, *args], cwd=tmp_path, env=environment, capture_output=True, text=True,
                          timeout=300, check=False)


@pytest.fixture
def script(tmp_path):
    path = tmp_path / "program.py"
    path.write_text(PROGRAM)
    return path


def test_the_runner_runs_a_cutile_script_on_tileworkbench(script, tmp_path):
    done = run_python(["-m", "tileworkbench.cutile_alias", str(script)], tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["cuda.tile", "True", "tileworkbench.errors", "[0.0,", "2.0,", "4.0,", "6.0]"]


def test_without_the_alias_cuda_tile_is_not_importable(script, tmp_path):
    done = run_python([str(script)], tmp_path)
    assert "No module named 'cuda.tile'" in done.stderr


def test_a_real_cutile_is_never_shadowed_silently(script, tmp_path):
    done = run_python(["-m", "tileworkbench.cutile_alias", str(script)], tmp_path, fake_cutile=True)
    assert done.returncode != 0
    assert "CuTileInstalledError: a real cuTile is installed" in done.stderr
    assert "force=True" in done.stderr


def test_a_real_cutile_is_shadowed_when_forced(script, tmp_path):
    done = run_python(["-m", "tileworkbench.cutile_alias", str(script)], tmp_path, fake_cutile=True,
                      env={"TILEWORKBENCH_CUTILE_ALIAS": "force"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("cuda.tile True")


def test_the_real_cutile_imports_as_usual_without_the_alias(tmp_path):
    done = run_python(["-c", "import cuda.tile; print(cuda.tile.REAL_CUTILE)"], tmp_path, fake_cutile=True)
    assert done.stdout.strip() == "True", done.stderr


def test_install_and_uninstall_in_a_process(tmp_path):
    code = textwrap.dedent("""
        import tileworkbench.cutile_alias as alias
        alias.install()
        import cuda.tile, tileworkbench.tile
        import cuda.tile._exception
        assert cuda.tile.launch is tileworkbench.tile.launch and alias.installed()
        assert not hasattr(tileworkbench.tile, "_exception")
        try:
            import cuda.tile._bytecode
        except ModuleNotFoundError as e:
            print("internal:", e)
        alias.uninstall()
        try:
            import cuda.tile
        except ModuleNotFoundError:
            print("uninstalled")
    """)
    done = run_python(["-c", code], tmp_path)
    assert done.returncode == 0, done.stderr
    assert "internal: cuda.tile._bytecode is internal to cuTile" in done.stdout
    assert done.stdout.strip().endswith("uninstalled")


def test_placeholders_let_code_that_imports_cutile_internals_import(tmp_path):
    code = textwrap.dedent("""
        from cuda.tile._bytecode.version import BytecodeVersion
        from cuda.tile._cext import dev_features_enabled
        assert not dev_features_enabled() and not (BytecodeVersion.V_13_2 < BytecodeVersion.V_13_3)
        print(repr(BytecodeVersion.V_13_2))
    """)
    (tmp_path / "p.py").write_text(code)
    done = run_python(["-m", "tileworkbench.cutile_alias", str(tmp_path / "p.py")], tmp_path,
                      env={"TILEWORKBENCH_CUTILE_ALIAS": "placeholders"})
    assert done.returncode == 0, done.stderr
    assert "cuTile internal cuda.tile._bytecode.version.BytecodeVersion.V_13_2 (placeholder)" in done.stdout


def test_pytest_plugin_installs_the_alias_before_conftest_imports(tmp_path):
    (tmp_path / "conftest.py").write_text("import cuda.tile as ct\n")
    (tmp_path / "test_it.py").write_text("import cuda.tile as ct\n\ndef test_name():\n"
                                         "    assert ct.kernel.__module__ == 'tileworkbench.tile._kernel'\n")
    done = run_python(["-m", "pytest", "-q", "-p", "tileworkbench.cutile_alias", "-p", "no:cacheprovider",
                       str(tmp_path)], tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout


def test_placeholders_answer_the_internal_test_helpers_with_tileworkbench_equivalents(tmp_path):
    code = ("from cuda.tile._ir.cast_ops import _is_implicit_cast_ok\n"
            "from cuda.tile._ir.typing_support import to_dtype\n"
            "import numpy as np\n"
            "print(_is_implicit_cast_ok(to_dtype(np.int8), to_dtype(np.int32)), "
            "_is_implicit_cast_ok(to_dtype(np.float32), to_dtype(np.int32)))\n")
    (tmp_path / "p.py").write_text(code)
    done = run_python(["-m", "tileworkbench.cutile_alias", str(tmp_path / "p.py")], tmp_path,
                      env={"TILEWORKBENCH_CUTILE_ALIAS": "placeholders"})
    assert done.stdout.split() == ["True", "False"], done.stderr


def test_the_python_processes_a_cutile_program_starts_import_cuda_tile_too(script, tmp_path):
    parent = tmp_path / "parent.py"
    parent.write_text("import subprocess, sys\n"
                      f"subprocess.run([sys.executable, {str(script)!r}], check=True)\n")
    done = run_python(["-m", "tileworkbench.cutile_alias", str(parent)], tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[:2] == ["cuda.tile", "True"]


def test_a_python_process_without_the_alias_variable_is_left_alone(tmp_path):
    site = ROOT / "tileworkbench" / "cutile_alias" / "site"
    done = run_python(["-c", "import sys; print('cuda.tile' in sys.modules, "
                             "any(type(f).__name__ == '_Finder' for f in sys.meta_path))"], tmp_path,
                      env={"PYTHONPATH": os.pathsep.join([str(site), str(ROOT)])})
    assert done.stdout.split() == ["False", "False"], done.stderr


def test_cutile_names_for_its_error_classes_are_the_same_classes(tmp_path):
    code = ("from cuda.tile._exception import TypeCheckingError, UnsupportedSyntaxError, InvalidValueError\n"
            "import cuda.tile as ct\n"
            "print(TypeCheckingError is ct.TileTypeError, UnsupportedSyntaxError is ct.TileSyntaxError, "
            "InvalidValueError is ct.TileValueError)\n")
    (tmp_path / "p.py").write_text(code)
    done = run_python(["-m", "tileworkbench.cutile_alias", str(tmp_path / "p.py")], tmp_path)
    assert done.stdout.split() == ["True", "True", "True"], done.stderr


def test_the_tuner_imports_as_cutile_s_public_module(tmp_path):
    code = textwrap.dedent("""
        import tileworkbench.cutile_alias as alias
        alias.install()
        import cuda.tile as ct
        from cuda.tile.tune import exhaustive_search, TuningResult
        import tileworkbench.tile.tune
        assert exhaustive_search is ct.tune.exhaustive_search is tileworkbench.tile.tune.exhaustive_search
        print(TuningResult.__name__)
    """)
    done = run_python(["-c", code], tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "TuningResult"


SCRIPTS = ROOT / "tests" / "cutile_scripts"


def test_cpu_runs_cutile_torch_scripts_and_their_python_children_on_the_interpreter(tmp_path):
    pytest.importorskip("torch")
    driver = tmp_path / "driver.py"   # two scripts in this process, the third in a child (one torch import each)
    driver.write_text("import runpy, subprocess, sys\n"
                      f"for name in ('vector_add', 'matmul'):\n"
                      f"    runpy.run_path(f'{SCRIPTS}/{{name}}.py', run_name='__main__')\n"
                      f"subprocess.run([sys.executable, '{SCRIPTS}/timed_softmax.py'], check=True)\n")
    done = run_python(["-m", "tileworkbench.cutile_alias", "--cpu", str(driver)], tmp_path)
    assert done.returncode == 0, done.stderr
    assert [line.split(":")[0] for line in done.stdout.splitlines() if "correctness check passed" in line] == \
        ["vector_add", "matmul", "softmax"]


def test_cpu_runs_a_numpy_cutile_script_with_or_without_torch(script, tmp_path):
    done = run_python(["-m", "tileworkbench.cutile_alias", "--cpu", str(script)], tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-4:] == ["[0.0,", "2.0,", "4.0,", "6.0]"]


def test_the_usage_line_names_the_cpu_option(tmp_path):
    done = run_python(["-m", "tileworkbench.cutile_alias", "--cpu"], tmp_path)
    assert done.returncode == 2 and "[--cpu] (SCRIPT | -m MODULE)" in done.stderr


def test_a_stray_cuda_module_in_the_working_folder_is_named(script, tmp_path):
    (tmp_path / "cuda.py").write_text("print('the stray module ran')\n")
    done = run_python(["-m", "tileworkbench.cutile_alias", str(script)], tmp_path)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert f"{tmp_path / 'cuda.py'} is a module named `cuda` that shadows the `cuda` package" in done.stderr
    assert "the stray module ran" not in done.stdout


def test_a_stray_cuda_module_imported_before_install_is_named(tmp_path):
    (tmp_path / "cuda.py").write_text("")
    code = ("import sys; sys.path.insert(0, '.'); import cuda\n"
            "import tileworkbench.cutile_alias as alias\n"
            "try:\n    alias.install()\nexcept ImportError as e:\n    print(e)\n")
    done = run_python(["-c", code], tmp_path)
    assert "cuda.py is a module named `cuda` that shadows" in done.stdout, done.stderr


def test_after_uninstall_from_cuda_import_tile_no_longer_gives_the_alias(tmp_path):
    code = textwrap.dedent("""
        import tileworkbench.cutile_alias as alias
        alias.install()
        from cuda import tile
        assert tile.kernel.__module__ == "tileworkbench.tile._kernel"
        alias.uninstall()
        try:
            from cuda import tile
        except ImportError:
            print("no alias")
        else:
            print("still", getattr(tile, "kernel", None))
    """)
    done = run_python(["-c", code], tmp_path)
    assert done.stdout.strip() == "no alias", done.stderr


def test_code_importing_cutiles_stub_module_and_its_newer_names_runs(tmp_path):
    program = tmp_path / "imports.py"
    program.write_text(textwrap.dedent("""
        import cuda.tile as ct
        from cuda.tile._stub import pack_to_bytes, mma_scaled, ArrayAnnotation
        from cuda.tile._datatype import float8_e5m3fnu
        names = ["float8_e5m3fnu", "ArrayAnnotation", "IndexedWithInt64", "ListAnnotation", "assume_divisible_by",
                 "ensure_constant", "mma_scaled", "pack_to_bytes", "unpack_from_bytes",
                 "grid_dependency_control_wait", "grid_dependency_control_launch_dependents"]
        print(pack_to_bytes is ct.pack_to_bytes, float8_e5m3fnu is ct.float8_e5m3fnu,
              [n for n in names if not hasattr(ct, n)])
    """))
    done = run_python(["-m", "tileworkbench.cutile_alias", str(program)], tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True", "[]"]
