# gorstar exec harness: how a tool call's code runs, the same in the warm pool's children
# (zygote.py, which Go appends to this file) and in the bench's baseline of one fresh interpreter
# per call, which runs this file alone: a notebook cell whose final expression's repr is printed,
# and an exception reported as `Type at line N: message` with the source line, as rStar2's harness
# does. Kept small and light on imports: the baseline pays for every line and import on each call.
import ast
import builtins
import io
import os
import resource
import sys


def error_line(code, exc):
    """`Type at line N: message` plus the offending source line, as rStar2's harness prints it."""
    lineno = None
    if isinstance(exc, SyntaxError) and exc.filename == "<code>":
        lineno = exc.lineno
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == "<code>":
            lineno = tb.tb_lineno
        tb = tb.tb_next
    msg = "%s at line %s: %s" % (type(exc).__name__, lineno if lineno else "?", exc)
    if isinstance(exc, SyntaxError):
        msg = "%s at line %s: %s" % (type(exc).__name__, lineno if lineno else "?", exc.msg)
    lines = code.splitlines()
    if lineno and 0 < lineno <= len(lines):
        msg += "\n    " + lines[lineno - 1].strip()
    return msg + "\n"


def compile_cell(code):
    """Compiles code as a notebook cell: (the statements, the final expression or None)."""
    tree = ast.parse(code, "<code>", "exec")
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = compile(ast.Expression(tree.body.pop().value), "<code>", "eval")
    return compile(tree, "<code>", "exec"), last


def harness(code, g, compiled=None):
    """Runs code like a notebook cell in globals g; returns the exit code (0 ok, 1 error).
    compiled is compile_cell(code) when the zygote already compiled it."""
    try:
        body, last = compiled if compiled is not None else compile_cell(code)
        exec(body, g)
        if last is not None:
            value = eval(last, g)
            if value is not None:
                print(repr(value))
        return 0
    except SystemExit as e:
        if e.code is None or e.code == 0:
            return 0
        if isinstance(e.code, int):
            return e.code & 0xFF
        sys.stderr.write(str(e.code) + "\n")
        return 1
    except BaseException as e:
        sys.stderr.write(error_line(code, e))
        return 1


def output_streams(out_fd, err_fd):
    """(stdout, stderr) text streams over two descriptors, as a call's harness writes them."""
    return (io.TextIOWrapper(io.FileIO(out_fd, "w", closefd=False), encoding="utf-8", errors="backslashreplace"),
            io.TextIOWrapper(io.FileIO(err_fd, "w", closefd=False), encoding="utf-8", errors="backslashreplace",
                             line_buffering=True))


def fresh_stdio(stdin_text):
    sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8", errors="replace")
    if stdin_text is not None:
        sys.stdin = io.StringIO(stdin_text)
    sys.stdout, sys.stderr = output_streams(1, 2)


def flush_stdio():
    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except BaseException:
            pass



def globals_dict():
    return {"__name__": "__main__", "__builtins__": builtins}


def vm_size():
    """This process's address-space size in bytes (a call's memory limit is this plus its own); 0
    where there is no /proc (macOS, which does not enforce the limit either)."""
    if not os.path.exists("/proc/self/statm"):
        return 0
    fd = os.open("/proc/self/statm", os.O_RDONLY)
    try:
        return int(os.read(fd, 200).split()[0]) * os.sysconf("SC_PAGE_SIZE")
    finally:
        os.close(fd)


def run_once(memory_mb, cpu_s, file_mb, code=None, path=None):
    """The baseline design (one fresh interpreter per call): same harness, limits set in-process.
    The code comes inline, or from the file at path when too long for one argument."""
    if path is not None:
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            code = f.read()
    limit = vm_size() + (memory_mb << 20)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    if cpu_s > 0:
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s))
    resource.setrlimit(resource.RLIMIT_FSIZE, (file_mb << 20, file_mb << 20))
    fresh_stdio(None)
    exit_code = harness(code, globals_dict())
    flush_stdio()
    os._exit(exit_code)
