# lit configuration for RN: IR tests of the dialect and passes, and the
# models that the Python frontend emits.
import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "RN"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".td"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.rn_obj_root, "test")
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py.in", "Inputs"]

llvm_config.with_system_environment(["HOME", "TMP", "TEMP"])
llvm_config.use_default_substitutions()

# The frontend is pure Python; models are emitted straight from the source.
frontend_dir = os.path.join(config.rn_src_root, "python-frontend")
llvm_config.with_environment("PYTHONPATH", frontend_dir, append_path=True)
config.substitutions.append(("%python", config.python_executable))

# FileCheck, not, count and split-file come from the LLVM installation.
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
tool_dirs = [config.rn_tools_dir, config.llvm_tools_dir]
llvm_config.add_tool_substitutions(
    [ToolSubst("rn-opt", unresolved="fatal"), ToolSubst("rn-compile", unresolved="fatal"),
     ToolSubst("rn-tblgen", unresolved="fatal")],
    tool_dirs,
)
# rn-tblgen's tests read the dialect's and MLIR's .td files.
config.substitutions.append(
    ("%tblgen_includes", " ".join("-I " + d for d in
                                  [config.rn_src_root] + config.mlir_include_dirs.split(";") if d)))
# rn-run belongs to the runtime half (absent with -DRN_BUILD_RUNTIME=OFF).
if os.path.exists(os.path.join(config.rn_tools_dir, "rn-run")):
    config.available_features.add("rn-run")
    llvm_config.add_tool_substitutions(
        [ToolSubst("rn-run", unresolved="ignore"), ToolSubst("rn-data", unresolved="ignore")],
        tool_dirs)

# The Fashion-MNIST IDX files of the Debian package dataset-fashion-mnist
# (scripts/setup.sh installs it) for the rn-run training tests.
if os.path.isdir("/usr/share/datasets/fashion-mnist"):
    config.available_features.add("fashion-mnist")
