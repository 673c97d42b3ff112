"""docs/environment.md against the code: every RN_* environment variable that
RN's programs, scripts and tests read has a row there, and every row names a
variable something still reads.

What counts as reading a variable from the environment, per kind of file:

- C, C++ and CUDA: a string literal that is exactly the name (the runtime
  reads its variables with std::getenv or a helper given the name, and the
  tests set theirs with setenv), so macros, include guards and CMake options
  (identifiers, never string literals) do not count;
- Python: a string literal that is exactly the name (os.environ.get("RN_X"),
  find_tool("rn-compile", "RN_COMPILE"), an env dict's key);
- shell (*.sh, scripts with a shell shebang, lit tests' RUN lines): an
  expansion with a default or alternative (${RN_X:-...}, ${RN_X-...},
  ${RN_X:+...}, ...); a plain $RN_X of a name no shell script assigns itself
  (setup.sh's RN_ROOT is a script variable, not the environment's); and a
  name handed to a child's environment: exported, `RN_X=... command`,
  `env RN_X=...`, `env -u RN_X`, `unset RN_X`;
- CMake: $ENV{RN_X}.

A documented variable is a row of a table in docs/environment.md whose first
cell starts with the backticked name (`RN_X` or `RN_X=VALUE`); rows whose
first cell is bold are section headings.
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "environment.md"

# The folders and files searched: the code, the scripts, the tests, CI and
# the CMake files. Build folders and the GPU bundle (copies) are not in them.
ROOTS = ("runtime", "compiler", "passes", "tools", "dialects", "python-frontend", "scripts",
         "bench", "test", "examples", ".ci", "cmake", "CMakeLists.txt")
SKIP_DIRS = {"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"}
C_SUFFIXES = {".c", ".cc", ".cpp", ".cxx", ".h", ".hh", ".hpp", ".cu", ".cuh", ".inc"}
LIT_SUFFIXES = {".mlir", ".test", ".ll"}

# Names the rules above would count that are not environment variables, each
# with the reason. (Empty today: keep a reason per entry when adding one.)
NOT_ENVIRONMENT: dict[str, str] = {}

NAME = r"RN_[A-Z0-9_]+"
LITERAL = re.compile(r"""(?<![\w$])(["'])(""" + NAME + r""")\1""")
CMAKE_ENV = re.compile(r"\$ENV\{(" + NAME + r")\}")
SHELL_DEFAULTED = re.compile(r"\$\{(" + NAME + r")(?::?[-=+?])")
SHELL_PLAIN = re.compile(r"\$(?:\{(" + NAME + r")\}|(" + NAME + r")(?![A-Z0-9_]))")
SHELL_ASSIGN = re.compile(r"(?<![\w${/.-])(" + NAME + r")=")
SHELL_ENV_WORDS = re.compile(r"(?:^|[\s;&|(])(?:export|unset|env)\b([^#;&|]*)")
SHELL_STATEMENT_START = re.compile(r"^\s*(?:(?:local|readonly|declare(?:\s+-\w+)*)\s+)?$")


def _files() -> list[Path]:
    found = []
    for root in ROOTS:
        path = REPO / root
        if path.is_file():
            found.append(path)
            continue
        for file in path.rglob("*"):
            if file.is_file() and not SKIP_DIRS.intersection(file.relative_to(REPO).parts):
                found.append(file)
    return sorted(f for f in found if f.resolve() != Path(__file__).resolve())


def _shell_lines(path: Path, text: str) -> list[str] | None:
    """The lines of `path` to read as shell, or None if it is no shell file."""
    if path.suffix in LIT_SUFFIXES:
        return [m.group(1) for m in re.finditer(r"(?://|;|#)\s*RUN:(.*)", text)]
    first = text.split("\n", 1)[0]
    if path.suffix == ".sh" or (first.startswith("#!") and re.search(r"\b(ba)?sh\b", first)):
        return [line for line in text.split("\n") if not line.lstrip().startswith("#")]
    return None


def _word_end(line: str, start: int) -> int:
    """The end of the shell word that starts at `start` (quotes, $(...), ${...})."""
    i, depth, quote = start, 0, None
    while i < len(line):
        c = line[i]
        if quote:
            if c == "\\" and quote == '"':
                i += 1
            elif c == quote:
                quote = None
        elif c == "\\":
            i += 1
        elif c in "'\"":
            quote = c
        elif line.startswith("$(", i) or line.startswith("${", i):
            depth += 1
            i += 1
        elif c in ")}" and depth:
            depth -= 1
        elif (c.isspace() or c in ";&|)") and not depth:
            break
        i += 1
    return i


def _shell_names(lines: list[str]) -> tuple[set[str], set[str], set[str]]:
    """(names read with a default or handed to a child's environment,
    names expanded plainly, names the script assigns as its own variables)."""
    read, plain, own = set(), set(), set()
    for line in lines:
        read.update(SHELL_DEFAULTED.findall(line))
        plain.update(a or b for a, b in SHELL_PLAIN.findall(line))
        for words in SHELL_ENV_WORDS.findall(line):
            read.update(re.findall(r"(?<![\w$])(" + NAME + r")\b", words))
        for m in SHELL_ASSIGN.finditer(line):
            rest = line[_word_end(line, m.end()):].strip()
            sole = not rest or rest[0] in "#;" or rest.startswith(("&&", "||"))
            if SHELL_STATEMENT_START.match(line[:m.start()]) and sole:
                own.add(m.group(1))
            else:
                read.add(m.group(1))  # RN_X=... command: for the command's environment
    return read, plain, own


def environment_reads() -> dict[str, set[str]]:
    """Every RN_* name read from the environment -> the files that read it."""
    readers: dict[str, set[str]] = defaultdict(set)
    plain_by_file: dict[str, set[str]] = {}
    assigned: set[str] = set()
    for path in _files():
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        if "RN_" not in text:
            continue
        rel = path.relative_to(REPO).as_posix()
        names: set[str] = set()
        if path.suffix in C_SUFFIXES or path.suffix == ".py":
            names = {m.group(2) for m in LITERAL.finditer(text)}
        elif path.name == "CMakeLists.txt" or path.suffix == ".cmake":
            names = set(CMAKE_ENV.findall(text))
        if (lines := _shell_lines(path, text)) is not None:
            read, plain, own = _shell_names(lines)
            names |= read
            plain_by_file[rel] = plain
            assigned |= own
        for name in names:
            readers[name].add(rel)
    for rel, plain in plain_by_file.items():
        for name in plain - assigned:
            readers[name].add(rel)
    for name in NOT_ENVIRONMENT:
        readers.pop(name, None)
    return dict(readers)


def documented() -> dict[str, str]:
    """Every variable with a row in docs/environment.md -> its row."""
    rows: dict[str, str] = {}
    problems = []
    for number, line in enumerate(DOC.read_text(encoding="utf-8").split("\n"), 1):
        if not line.startswith("|") or re.match(r"\|\s*(variable\s*\||-)", line):
            continue
        first = line.split("|")[1].strip()
        if first.startswith("**"):
            continue
        m = re.match(r"`(" + NAME + r")(=[^`]*)?`", first)
        if not m:
            problems.append(f"line {number}: the first cell is neither `RN_NAME` nor a **heading**")
        elif m.group(1) in rows:
            problems.append(f"line {number}: {m.group(1)} has a row already")
        else:
            rows[m.group(1)] = line
    assert not problems, "docs/environment.md:\n" + "\n".join(problems)
    return rows


@pytest.fixture(scope="module")
def reads() -> dict[str, set[str]]:
    return environment_reads()


def test_every_variable_read_is_documented(reads: dict[str, set[str]]) -> None:
    missing = sorted(set(reads) - set(documented()))
    assert not missing, (
        "RN_* variables read but without a row in docs/environment.md:\n"
        + "\n".join(f"  {name} (read by {', '.join(sorted(reads[name]))})" for name in missing))


def test_every_documented_variable_is_read(reads: dict[str, set[str]]) -> None:
    stale = sorted(set(documented()) - set(reads))
    assert not stale, (
        "docs/environment.md documents variables nothing reads (remove the rows, or list a "
        "name in NOT_ENVIRONMENT's counterpart if the reader is one this test cannot see):\n  "
        + "\n  ".join(stale))


def test_each_row_names_a_file_that_reads_it(reads: dict[str, set[str]]) -> None:
    """The "read by" cell (the row's last) names at least one of the readers."""
    wrong = []
    for name, row in documented().items():
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        named = set(re.findall(r"`([\w./-]+/[\w.-]+)`", cells[-1]))
        if name in reads and not named & reads[name]:
            wrong.append(f"  {name}: the row names {sorted(named) or 'no file'}, "
                         f"read by {', '.join(sorted(reads[name]))}")
    assert not wrong, "docs/environment.md rows whose readers are elsewhere:\n" + "\n".join(wrong)


def test_the_rules_see_each_kind_of_read(tmp_path: Path) -> None:
    """The shell rules on made-up lines: what is a read and what is not."""
    read, plain, own = _shell_names([
        'dir=${RN_A:-x} other=${RN_B-} ${RN_C:+y}',
        'RN_D=1 bash child.sh',
        'env RN_E=2 -u RN_F cmd',
        'export RN_G=$here',
        'RN_OWN=$(cd "$(dirname "$0")" && pwd)',
        'local RN_LOCAL="a b"; echo $RN_OWN ${RN_LOCAL}',
        'x=$RN_PLAIN',
        'GTEST_SHARD_INDEX=$k RN_H=0 cmd',
    ])
    assert read == {"RN_A", "RN_B", "RN_C", "RN_D", "RN_E", "RN_F", "RN_G", "RN_H"}
    assert own == {"RN_OWN", "RN_LOCAL"}
    assert plain == {"RN_OWN", "RN_LOCAL", "RN_PLAIN"}
    assert {m.group(2) for m in LITERAL.finditer('getenv("RN_X"); RN_MACRO; "RN_Y=1"')} == {"RN_X"}
