"""A solution may not reach the reference it replaces: the check before grading.

A lab grades the student's functions by running kafka-ref with them in place of its own
(kafka_ref/seams.py). A solution that hands the work back to kafka-ref, say

    from kafka_ref.log import isolation

    def last_stable_offset(*args):
        return isolation.last_stable_offset.reference(*args)

would pass every test and teach nothing. `kafka-ref lab check` reads the solution's source
(with `ast`, nothing is run) and refuses it, with the line and the reason, when it:

* imports `kafka_ref.seams`, the machinery that holds every reference;
* imports a module that holds one of the lab's seams, or from it any name but those the
  lab's own skeleton imports (`FetchedBatch` for lab 07: the types of the contract); the
  module's other functions are the reference and its private helpers;
* imports one of the lab's seam functions from anywhere in kafka_ref, or reaches one (or
  the seam's module) as an attribute of a kafka_ref module it imported;
* uses what could do the same out of sight: `importlib`, `__import__`, `eval`, `exec`,
  `compile`, `globals()`, `vars()`, `sys.modules`, frames, a function's closure, globals,
  code or wrapped function, `getattr` with a computed name or passed around as a value
  (`g = getattr`), `operator.attrgetter` and `methodcaller`, a module that finds an
  object or runs code by its name (`pickle`, `marshal`, `runpy`, `pydoc`, `code`), or
  another process, where the reference runs untouched (`subprocess`, `multiprocessing`,
  `os.system`, `os.exec*`, `os.fork`, ...).

The runtime half is in kafka_ref/seams.py: the seam's dispatcher exposes no attribute that
leads to the reference, and forgets it once a student's function is chosen; under `lab
check` the lab's seams hold no reference at all, so a function the solution leaves out
fails instead of running kafka-ref's.

Rules: LAB-5 (spec/labs.md).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from kafka_ref.tools.lab_course import Lab

# Another process runs kafka-ref without the solution: a way to call the reference.
PROCESS_MODULES = {"subprocess", "multiprocessing", "pty"}
PROCESS_NAMES = set(
    """system popen fork forkpty execl execle execlp execlpe execv execve execvp execvpe
    spawnl spawnle spawnlp spawnlpe spawnv spawnve spawnvp spawnvpe posix_spawn posix_spawnp
    create_subprocess_exec create_subprocess_shell ProcessPoolExecutor""".split()  # noqa: SIM905
)
FORBIDDEN_MODULES = {
    "importlib": "loads modules by name, out of the checker's sight",
    "imp": "loads modules by name, out of the checker's sight",
    "builtins": "reaches __import__ and eval",
    "inspect": "reaches frames, closures and source",
    "gc": "reaches every object of the process",
    "ctypes": "reaches the interpreter's memory",
    "pickle": "loads any object by its module and name",
    "marshal": "loads code objects",
    "runpy": "runs modules by name",
    "pydoc": "finds any object by its dotted name",
    "code": "compiles and runs source",
    "codeop": "compiles source",
    **dict.fromkeys(PROCESS_MODULES, "starts processes, where kafka-ref's own code runs"),
}
# operator's ways to reach an attribute whose name is computed: getattr in disguise
COMPUTED_ATTRIBUTE_GETTERS = {"attrgetter", "methodcaller"}
FORBIDDEN_CALLS = {"__import__", "eval", "exec", "compile", "globals", "vars", "breakpoint"}
ATTRIBUTE_CALLS = {"getattr", "setattr", "delattr", "hasattr"}
# A function's way back to its module and wrapped code, a class's to every other class, a
# module's to its loader, frames and tracebacks, and sys's table of modules.
FORBIDDEN_ATTRIBUTES = set(
    """__closure__ __code__ __globals__ __wrapped__ __builtins__ __dict__ __module__ __self__
    __func__ __defaults__ __kwdefaults__ __subclasses__ __bases__ __base__ __mro__
    __getattribute__ __loader__ __spec__ __reduce__ __reduce_ex__ __import__ f_globals
    f_locals f_back f_builtins gi_frame cr_frame ag_frame tb_frame __traceback__ modules
    _getframe meta_path path_hooks""".split()  # noqa: SIM905 - a list of words
)
SYS_ATTRIBUTES = {"modules", "_getframe", "meta_path", "path_hooks"}


@dataclass(frozen=True)
class Refusal:
    line: int
    why: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.why}"


class Checker(ast.NodeVisitor):
    def __init__(self, lab: Lab) -> None:
        self.lab = lab
        self.seam_names = {s.name for s in lab.seams}
        self.seam_modules = {s.module for s in lab.seams}
        self.allowed = lab.allowed_imports
        self.bound: dict[str, str] = {}  # a name the file binds -> the kafka_ref module it is
        self.called: set[int] = set()  # the ast.Name nodes that are the function of a call
        self.refusals: list[Refusal] = []

    def refuse(self, node: ast.AST, why: str) -> None:
        self.refusals.append(Refusal(getattr(node, "lineno", 0), why))

    def holds(self, module: str) -> str | None:
        """Why importing `module` is refused, as a clause ("which holds ..."), if it is."""
        if module == "kafka_ref.seams":
            return "which holds every seam's reference"
        if module in self.seam_modules:
            names = " and ".join(s.name for s in self.lab.seams if s.module == module)
            allowed = ", ".join(sorted(self.allowed.get(module, ())))
            only = f"from it, import only {allowed}" if allowed else "write them yourself"
            return f"which holds the reference of lab {self.lab.number}'s {names} ({only})"
        root = module.split(".")[0]
        if root in FORBIDDEN_MODULES:
            return f"which {FORBIDDEN_MODULES[root]}"
        return None

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if why := self.holds(alias.name):
                self.refuse(node, f"imports {alias.name}, {why}")
            elif alias.name.split(".")[0] == "kafka_ref":
                bound = alias.asname or "kafka_ref"
                self.bound[bound] = alias.name if alias.asname else "kafka_ref"

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        for alias in node.names:
            full = f"{module}.{alias.name}"
            if why := self.holds(module) if module.split(".")[0] in FORBIDDEN_MODULES else None:
                self.refuse(node, f"imports from {module}, {why}")
            elif module == "sys" and alias.name in SYS_ATTRIBUTES:
                self.refuse(node, f"imports sys.{alias.name}, which reaches modules and frames")
            elif module == "operator" and alias.name in COMPUTED_ATTRIBUTE_GETTERS:
                self.refuse(node, f"imports operator.{alias.name}, a getattr with a computed name")
            elif alias.name in PROCESS_NAMES:
                self.refuse(node, f"imports {full}, which starts a process: write the code")
            elif module.split(".")[0] != "kafka_ref":
                continue
            elif alias.name == "*":
                self.refuse(node, f"imports * from {module}: import the names you use")
            elif module == "kafka_ref.seams":
                self.refuse(node, f"imports from {module}, {self.holds(module)}")
            elif module in self.seam_modules and alias.name not in self.allowed[module]:
                self.refuse(node, f"imports {alias.name} from {module}, {self.holds(module)}")
            elif why := self.holds(full):
                self.refuse(node, f"imports {full}, {why}")
            elif alias.name in self.seam_names:
                own = f"lab {self.lab.number}'s own function, write it yourself"
                self.refuse(node, f"imports {alias.name} from {module}: it is {own}")
            else:
                self.bound[alias.asname or alias.name] = full

    def visit_Attribute(self, node: ast.Attribute) -> None:
        sys_only = node.attr in SYS_ATTRIBUTES
        if node.attr in FORBIDDEN_ATTRIBUTES and (not sys_only or self.is_name(node.value, "sys")):
            self.refuse(node, f"uses .{node.attr}, which reaches code out of the checker's sight")
            return
        if node.attr in COMPUTED_ATTRIBUTE_GETTERS:
            self.refuse(node, f"uses .{node.attr}, a getattr with a computed name")
            return
        if node.attr in PROCESS_NAMES:
            self.refuse(node, f"uses .{node.attr}, which starts a process: write the code")
            return
        if (why := self.reaches(node)) is not None:
            self.refuse(node, why)
            return
        self.generic_visit(node)

    def reaches(self, node: ast.Attribute) -> str | None:
        """Why `a.b.c`, with `a` a kafka_ref module the file imported, is refused, if it is."""
        dotted = self.dotted(node)
        if dotted is None:
            return None
        last = dotted.rsplit(".", 1)[-1]
        if last in self.seam_names:
            return f"uses {dotted}: it is lab {self.lab.number}'s own function, write it yourself"
        if why := self.holds(dotted):
            return f"uses {dotted}, {why}"
        if last in {m.rsplit(".", 1)[-1] for m in [*self.seam_modules, "kafka_ref.seams"]}:
            return f"uses {dotted}: it may be the module of lab {self.lab.number}'s reference"
        return None

    def visit_Name(self, node: ast.Name) -> None:
        if node.id == "__builtins__":
            self.refuse(node, "uses __builtins__, which reaches __import__ and eval")
        elif node.id in ATTRIBUTE_CALLS and id(node) not in self.called:
            self.refuse(node, f"uses {node.id} as a value: call it with the attribute written")

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name):
            self.called.add(id(func))
        if isinstance(func, ast.Name) and func.id in FORBIDDEN_CALLS:
            self.refuse(node, f"calls {func.id}(), which runs code out of the checker's sight")
        if isinstance(func, ast.Name) and func.id in ATTRIBUTE_CALLS and len(node.args) >= 2:
            name = node.args[1]
            if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
                self.refuse(node, f"calls {func.id}() with a computed name: write the attribute")
            elif name.value in FORBIDDEN_ATTRIBUTES or name.value in self.seam_names:
                self.refuse(
                    node, f"calls {func.id}(..., {name.value!r}), which reaches the reference"
                )
        self.generic_visit(node)

    @staticmethod
    def is_name(node: ast.AST, name: str) -> bool:
        return isinstance(node, ast.Name) and node.id == name

    def dotted(self, node: ast.AST) -> str | None:
        """`a.b.c` as the kafka_ref path it names, when `a` is a kafka_ref module."""
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name) or node.id not in self.bound:
            return None
        return ".".join([self.bound[node.id], *reversed(parts)])


def refusals(source: str, lab: Lab) -> list[Refusal]:
    """Why `source`, a solution of `lab`, may not be graded; empty when it may."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []  # the grader shows the syntax error, test by test
    checker = Checker(lab)
    checker.visit(tree)
    return sorted(set(checker.refusals), key=lambda r: (r.line, r.why))
