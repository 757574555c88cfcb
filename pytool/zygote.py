# gorstar exec zygote: the warm Python side of a sandbox worker. Go runs it after harness.py (the
# code that runs a call: harness(), output_streams(), ...). Two processes run inside the sandbox,
# and neither ever runs user code itself:
#
# - the supervisor (the process Go starts) talks to Go over its stdin/stdout with frames of a
#   4-byte big-endian length followed by a JSON object, and does all of a call's bookkeeping:
#   compiling the code, the call's pipes, collecting output, limits on output, kills, sweeping
#   leftover processes, wiping /tmp, sessions, the result;
# - the template, the supervisor's only child, imports the allowed modules and then only forks:
#   one child per call, which runs the call with the pipes and limits the supervisor chose.
#
# Every page a process writes after a fork costs a copy-on-write fault (5-8 µs on a VM), and a fork
# makes every page of the template read-only again. So the template's loop does as little as it
# can: receive a request (a marshalled tuple) with the call's file descriptors over a socket, fork,
# report the pid, and report the exit status when the child ends. The bookkeeping runs in the
# supervisor, which never forks a call and so writes its own pages without faults.
#
# Go -> supervisor:  {"op": "run", "id", "code", "stdin", "session", limits...}
#                    {"op": "kill", "id"}            (the caller left, or Go's grant of waits is spent)
#                    {"op": "deadline", "id"}        (the wall-clock deadline passed: extend or kill)
#                    {"op": "close_session", "session"}
# supervisor -> Go:  {"op": "ready", "pid", "missing": [...], "fork": "native" | "python", "syscall_filter"}
#                    {"op": "result", "id", "status", "stdout", "stderr", "exit_code", ...}
#                    {"op": "extend", "id", "ms"}    (the call waited that long for a core: Deadline)
# supervisor -> template (socket, SCM_RIGHTS): marshal of ("run" | "session", uid, memory bytes,
#                    cpu s, max processes, file bytes, reseed numpy, compiled code or None, source or
#                    None (then in the last fd), directory) with the child's descriptors, which arrive
#                    as fds 0, 1, 2, ... of the template and so of the child
# template -> supervisor: ("ready", missing, fork kind, filtered), ("pid", pid), ("exit", pid, wait status, kind)
import ast
import builtins
import errno
import gc
import io
import json
import marshal
import os
import resource
import select
import signal
import socket
import struct
import sys
import time
import warnings

CONF = json.loads(sys.argv[1])
UID_BASE = CONF.get("uid_base", 0)  # uid of stateless children; sessions use UID_BASE + slot
DROP = CONF.get("drop_privileges", False)  # False when the sandbox runs as an unprivileged user
SESSION_SLOTS = CONF.get("session_slots", 0)
IDLE = CONF.get("idle_priority", False)  # exec.priority = "idle"
OWN_PIDNS = CONF.get("own_pid_namespace", False)  # False only with --sandbox=none: never sweep the host's /proc
IDLE_S = CONF.get("session_idle_s", 0)
# The call's private writable directory, wiped after every call: /tmp inside the sandbox, a
# directory Go made for this worker alone with --sandbox=none. Never a shared directory.
TMP = CONF.get("tmp_dir", "")
CTL_IN, CTL_OUT = 0, 1
PAGE = os.sysconf("SC_PAGE_SIZE")
X86_64 = os.uname().machine in ("x86_64", "amd64")  # the native fork-and-wait and the syscall filter
# Linux, or macOS (Seatbelt, or --sandbox=none): without Linux there are no packet sockets, pidfds,
# /proc, SCHED_IDLE or parent-death signals, and the code below takes the portable way instead.
LINUX = sys.platform.startswith("linux") and not CONF.get("portable")

# Run once in the template after the imports, so that modules a library loads lazily on first use
# (and its caches) are already in the memory every child inherits.
WARMUP = {
    "sympy": "x = sympy.Symbol('x')\nsympy.factor(x**4 - 1); sympy.expand((x + 2)**5)\n"
             "sympy.solve(x**2 - 5*x + 6, x); sympy.simplify(sympy.sin(x)**2 + sympy.cos(x)**2)\n"
             "sympy.integrate(x**2, (x, 0, 3)); sympy.Rational(1, 3) + sympy.sqrt(8); sympy.isprime(97)\n",
    "numpy": "a = numpy.arange(12.0).reshape(3, 4); (a @ a.T).sum(); numpy.linalg.det(numpy.eye(3))\n",
}

# Code up to this size is compiled by the supervisor (compiling in a child would write hundreds of
# its pages, each a fault) and reaches the child marshalled; larger or invalid code, or code that
# compiles with a warning (the warning is the call's output), is compiled in the child.
PRECOMPILE_MAX_CHARS = 64 << 10
# A request to the template is one socket message, bounded by the socket's buffer (~200 KiB): past
# this size the source travels in a memfd instead, and compiled code past it is left to the child.
INLINE_MAX = 96 << 10


def read_exact(fd, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = os.read(fd, n - len(buf))
        if not chunk:
            raise EOFError
        buf += chunk
    return bytes(buf)


def read_msg(fd=CTL_IN):
    (n,) = struct.unpack(">I", read_exact(fd, 4))
    return json.loads(read_exact(fd, n))


def write_msg(obj, fd=CTL_OUT):
    data = json.dumps(obj).encode()
    data = struct.pack(">I", len(data)) + data
    while data:
        data = data[os.write(fd, data):]


# ---------------------------------------------------------------- the template


TEMPLATE_SOCK = 10  # the template's end of the socket to the supervisor
TEMPLATE_DIAG = 11  # the supervisor's stderr, for the template's last words
VM_BYTES = 0  # the template's address-space size; a child's limit is this plus the call's memory


def enter_child(req, nfds):
    """The child's set-up before user code: its own process group, limits, an unprivileged uid. Its
    descriptors 0..nfds-1 are the call's; everything above is the template's and is closed. Kept
    to a few calls: each Python call writes pages (faults)."""
    uid, memory, cpu_s, max_procs, file_bytes = req[1:6]
    os.closerange(nfds, 1 << 16)
    # Its own process group (the supervisor ends a call by it). Not its own session: Go starts
    # every sandbox in a session of its own, without a controlling terminal, and where the kernel
    # groups processes by session for scheduling (autogroups), a session per call would weigh on
    # the CPU as much as the whole gorstar process beside it, whatever exec.priority says.
    os.setpgid(0, 0)
    setrlimit = resource.setrlimit
    try:
        setrlimit(resource.RLIMIT_AS, (VM_BYTES + memory, VM_BYTES + memory))
    except (ValueError, OSError):
        if LINUX:
            raise  # macOS refuses some values and enforces none: no memory limit there
    setrlimit(resource.RLIMIT_FSIZE, (file_bytes, file_bytes))
    if cpu_s > 0:
        setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s))
    if max_procs > 0:
        setrlimit(resource.RLIMIT_NPROC, (max_procs, max_procs))
    if DROP:
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    if req[9]:
        os.chdir(req[9])


def call_child(req, nfds):
    """A stateless call: fds 0, 1, 2 are its stdin, stdout and stderr (and 3 the source, when the
    request does not carry it). sys.stdin/stdout/stderr already wrap fds 0, 1 and 2 and the
    template never wrote through them, so their buffers are empty: no new objects are needed."""
    code = 2
    try:
        enter_child(req, nfds)
        compiled, source = req[7], req[8]
        if source is None:
            with open(3, "rb") as f:
                source = f.read().decode("utf-8", errors="replace")
        code = harness(source, globals_dict(), marshal.loads(compiled) if compiled else None)
    except BaseException:
        pass
    flush_stdio()
    os._exit(code)


def session_child(req, nfds):
    """A session: a live interpreter that runs each request in the same globals. fd 0 is
    /dev/null, 1 and 2 its output, 3 its requests, 4 where it reports each request's end."""
    try:
        enter_child(req, nfds)
        g = globals_dict()
        while True:
            try:
                r = read_msg(3)
            except EOFError:
                os._exit(0)
            fresh_stdio(r.get("stdin") or "")
            code = harness(r["code"], g)
            flush_stdio()
            write_msg({"exit_code": code}, 4)
    except BaseException:
        pass
    os._exit(2)


# Run through the harness once in the template, output to /dev/null, so that what every call does
# (print, flush, the last expression's repr, an error line) finds the interpreter's method cache
# already filled: a child that misses it writes the cache and the reference counts of the names
# and attributes it looks up, pages spread across the heap (measured: 212 -> 197 faults in a
# trivial call's child).
WARM_HARNESS = "x = [1, 2.5, 'a']\nprint('warm', len(x), sep=': ')\nprint(x, {'k': x}, (1, 2))\nx\n"


def warm_harness():
    saved = sys.stdout, sys.stderr
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        sys.stdout, sys.stderr = output_streams(null, null)
        for code in (WARM_HARNESS, "1 / 0"):
            harness(code, globals_dict(), marshal.loads(marshal.dumps(compile_cell(code))))
        flush_stdio()
    except Exception:
        pass
    finally:
        sys.stdout, sys.stderr = saved
        os.close(null)


def reap_orphans(live, reaped, waiting=()):
    """Reaps the template's ended children: a call's leftovers (the template is their subreaper),
    killed by the supervisor. A tracked child reaped here keeps its status for its pidfd's turn."""
    tracked = None
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        if tracked is None:
            tracked = set(live.values()) | set(waiting)
        if pid in tracked:
            reaped[pid] = status


def template_main(sock):
    """The template's life: import, warm up, freeze, then fork on request until the socket ends."""
    global fork, fork_wait, VM_BYTES
    os.dup2(sock.fileno(), TEMPLATE_SOCK)
    os.dup2(2, TEMPLATE_DIAG)
    sock.close()
    os.closerange(0, TEMPLATE_SOCK)  # descriptors arrive as 0, 1, 2, ...: the lowest free ones
    sock = socket.socket(fileno=TEMPLATE_SOCK)
    if TMP:
        os.chdir(TMP)
    fork = make_fork()
    fork_wait = make_fork_wait()
    try:
        import ctypes
        # PR_SET_CHILD_SUBREAPER: whatever a call leaves running becomes the template's child when
        # its parent ends, so the supervisor finds leftovers in one small file (leftovers()).
        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)
    except Exception:
        pass
    missing = []
    for mod in CONF["modules"]:
        try:
            __import__(mod)
        except Exception:
            missing.append(mod)
            continue
        if mod in WARMUP:
            try:
                exec(WARMUP[mod], {mod: sys.modules[mod]})
            except Exception:
                pass
    warm_harness()
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    gc.collect()
    gc.freeze()  # keep the imported heap shared between the template and its children
    collapse_heap_into_huge_pages()
    VM_BYTES = vm_size()
    filtered = OWN_PIDNS and install_syscall_filter()
    send, recv_fds, loads, dumps = sock.send, socket.recv_fds, marshal.loads, marshal.dumps
    from fcntl import fcntl, F_DUPFD
    send(dumps(("ready", missing, "native" if getattr(fork_wait, "native", False) else "python", filtered)))
    poller = select.poll()
    poller.register(TEMPLATE_SOCK, select.POLLIN)
    live = {}  # pidfd -> pid
    waiting = set()  # pids of children to poll for, where there are no pidfds
    reaped = {}  # pid -> wait status, of tracked children reaped by the pass below before their pidfd said so
    calls = 0
    try:
        while True:
            events = poller.poll(5 if waiting else None)
            for pid in list(waiting):  # no pidfds (not Linux): ended children are found by polling
                done, status = (pid, reaped.pop(pid)) if pid in reaped else os.waitpid(pid, os.WNOHANG)
                if done:
                    waiting.discard(pid)
                    send(dumps(("exit", pid, status, "")))
            for fd, _ in events:
                if fd != TEMPLATE_SOCK:
                    pid = live.pop(fd)
                    poller.unregister(fd)
                    os.close(fd)
                    status = reaped.pop(pid) if pid in reaped else os.waitpid(pid, 0)[1]
                    send(dumps(("exit", pid, status, "")))
                    continue
                msg, fds, _, _ = recv_fds(sock, 1 << 18, 8)
                if not msg:
                    return
                req = loads(msg)
                reap_orphans(live, reaped, waiting)
                calls += 1
                if calls % RECOLLAPSE_EVERY == 0:
                    collapse_heap_into_huge_pages()
                    VM_BYTES = vm_size()
                if req[0] == "run" and OWN_PIDNS:
                    # Keep still while the call runs: a page written now would be shared with the
                    # child, so the write would split the template's huge page there and the next
                    # fork would copy 512 page-table entries instead of one. fork_wait returns
                    # in the template only once the child has exited. The supervisor ends the
                    # call by uid when it must, and learns the pid with the exit.
                    pid, status = fork_wait(req[6])
                    if pid == 0:
                        call_child(req, len(fds))
                    os.closerange(0, len(fds))
                    send(dumps(("exit", pid, status, "run")))
                    continue
                pid = fork(req[6])
                if pid == 0:
                    session_child(req, len(fds)) if req[0] == "session" else call_child(req, len(fds))
                os.closerange(0, len(fds))
                if not LINUX or not hasattr(os, "pidfd_open"):
                    waiting.add(pid)
                    send(dumps(("pid", pid)))
                    continue
                # Above the descriptors the next request brings, which must arrive as 0, 1, 2, ...
                low = os.pidfd_open(pid)
                pidfd = fcntl(low, F_DUPFD, TEMPLATE_SOCK + 2)
                os.close(low)
                live[pidfd] = pid
                poller.register(pidfd, select.POLLIN)
                send(dumps(("pid", pid)))
    except BaseException as e:
        os.write(TEMPLATE_DIAG, ("gorstar zygote template: %s: %s\n" % (type(e).__name__, e)).encode())
    finally:
        os._exit(1)



# ---------------------------------------------------------------- syscall filter (template)


# System calls no tool call needs and the kernel's attack surface is in: tracing other processes,
# mounts, new namespaces (an unprivileged sandbox could otherwise make a user namespace of its own
# and hold every capability there), keyrings, kernel modules, BPF, perf, userfaultfd, io_uring.
# x86-64 numbers; they fail with EPERM.
DENIED_SYSCALLS = {
    "ptrace": 101, "syslog": 103, "vhangup": 153, "pivot_root": 155, "acct": 163, "mount": 165,
    "umount2": 166, "swapon": 167, "swapoff": 168, "reboot": 169, "sethostname": 170,
    "setdomainname": 171, "iopl": 172, "ioperm": 173, "init_module": 175, "delete_module": 176,
    "quotactl": 179, "lookup_dcookie": 212, "kexec_load": 246, "add_key": 248, "request_key": 249,
    "keyctl": 250, "unshare": 272, "perf_event_open": 298, "name_to_handle_at": 303,
    "open_by_handle_at": 304, "setns": 308, "process_vm_readv": 310, "process_vm_writev": 311,
    "finit_module": 313, "kexec_file_load": 320, "bpf": 321, "userfaultfd": 323,
    "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427, "open_tree": 428,
    "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433,
    "mount_setattr": 442,
}
SYS_CLONE, SYS_CLONE3 = 56, 435
# CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET: refused in clone's flags.
CLONE_NEW_ANY = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000


def syscall_filter_x86_64():
    """The classic-BPF program of the filter (seccomp_data: nr at 0, arch at 4, args from 16).
    clone3 fails with ENOSYS, as on kernels without it, so that glibc falls back to clone, whose
    flags the filter can read; another architecture's calls (x32, i386) end the process."""
    ld, jeq, jge, jset, ret = 0x20, 0x15, 0x35, 0x45, 0x06
    allow, kill = 0x7FFF0000, 0x80000000
    eperm, enosys = 0x00050000 | 1, 0x00050000 | 38

    def insn(code, k, jt=0, jf=0):
        return struct.pack("=HBBI", code, jt, jf, k)

    prog = [insn(ld, 4), insn(jeq, 0xC000003E, 1, 0), insn(ret, kill),  # AUDIT_ARCH_X86_64
            insn(ld, 0), insn(jge, 0x40000000, 0, 1), insn(ret, eperm)]  # x32 numbers
    for nr in sorted(DENIED_SYSCALLS.values()):
        prog += [insn(jeq, nr, 0, 1), insn(ret, eperm)]
    prog += [insn(jeq, SYS_CLONE3, 0, 1), insn(ret, enosys),
             insn(jeq, SYS_CLONE, 0, 3), insn(ld, 16), insn(jset, CLONE_NEW_ANY, 0, 1), insn(ret, eperm),
             insn(ret, allow)]
    return b"".join(prog)


def install_syscall_filter():
    """Puts the template, and so every call it forks, under DENIED_SYSCALLS (seccomp; the
    supervisor set no_new_privs). Only x86-64; returns whether the filter is on."""
    if not X86_64:
        return False
    try:
        import ctypes

        class SockFprog(ctypes.Structure):
            _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
        code = syscall_filter_x86_64()
        buf = ctypes.create_string_buffer(code, len(code))
        prog = SockFprog(len(code) // 8, ctypes.addressof(buf))
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.argtypes = [ctypes.c_long, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_void_p]
        # seccomp(SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_SPEC_ALLOW, prog). Without that flag
        # the kernel may also turn on speculation barriers for the process (spectre_v2_user and
        # spec_store_bypass in their "seccomp" modes: a barrier at every context switch), which
        # measured +0.1 ms per fork and wait here; the processes had none before the filter.
        if libc.syscall(317, 1, 4, ctypes.addressof(prog)) == 0:
            return True
        libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong]
        return libc.prctl(22, 2, ctypes.addressof(prog), 0, 0) == 0  # PR_SET_SECCOMP, SECCOMP_MODE_FILTER
    except Exception:
        return False


# ---------------------------------------------------------------- fork cost (template)


# Random generators a forked child inherits from the template in the template's state. Without a
# reseed every call would draw the same numbers.
def reseed(needed=True):
    """Gives a forked child its own random streams: Python's `random`, numpy's global generator and
    sympy's own (`sympy.core.random.rng`, behind randprime, randint, ...). Code reaches them only by
    a name with "rand" in it (random, np.random, randint, randprime, randn, ...), so a stateless call
    whose code has none skips this: reseeding writes ~50 pages (numpy's ~170), each a copy-on-write
    fault (5-8 µs on a VM). Library-internal randomness stays as the template left it, which changes
    no result (sympy seeds its randomized algorithms itself)."""
    if not needed:
        return
    if "random" in sys.modules:
        sys.modules["random"].seed()
    for name, attr in (("numpy.random", "seed"), ("sympy.core.random", "rng")):
        mod = sys.modules.get(name)
        if mod is None:
            continue
        try:
            target = getattr(mod, attr)
            (target.seed if attr == "rng" else target)()
        except Exception:
            pass


def make_fork():
    """Returns the fork used for calls. os.fork() re-initialises the interpreter's threading state
    in the child and runs every registered at-fork hook, which writes ~200 pages (each a
    copy-on-write fault, ~1.5 ms on a VM). The zygote is single-threaded and holds the GIL
    throughout (PyDLL does not release it), so a plain libc fork is safe; the one hook that
    matters, reseeding `random`, is done by hand so that calls do not share random streams."""
    import ctypes
    try:
        libc_fork = ctypes.PyDLL(None, use_errno=True).fork
        libc_fork.restype = ctypes.c_int
        libc_fork.argtypes = []
    except Exception:
        return lambda reseed_random=True: os.fork()

    def fork(reseed_random=True):
        pid = libc_fork()
        if pid < 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err))
        if pid == 0:
            reseed(reseed_random)
        return pid

    return fork


def assemble(parts):
    """Machine code from parts: bytes, ("label", name), or ("jump", opcode, name) for a short
    (rel8) jump to a label."""
    pos, labels = 0, {}
    for part in parts:
        if isinstance(part, bytes):
            pos += len(part)
        elif part[0] == "label":
            labels[part[1]] = pos
        else:
            pos += 2
    code = bytearray()
    for part in parts:
        if isinstance(part, bytes):
            code += part
        elif part[0] == "jump":
            rel = labels[part[2]] - (len(code) + 2)
            if not -128 <= rel < 128:
                raise ValueError("jump too far")
            code += bytes((part[1], rel & 0xFF))
    return bytes(code)


def fork_wait_x86_64(fork_addr, waitpid_addr, errno_addr):
    """int fork_wait(int *status): fork(); in the child return 0; in the parent wait for the child
    (again after EINTR) and return its pid with its wait status in *status, or -1. System V
    x86-64 calling convention; the addresses are libc's fork, waitpid and __errno_location."""
    def call(addr):
        return b"\x48\xb8" + struct.pack("<Q", addr) + b"\xff\xd0"  # movabs rax, addr; call rax
    return assemble([
        b"\x53", b"\x41\x54", b"\x48\x83\xec\x08",  # push rbx; push r12; sub rsp, 8 (aligned)
        b"\x48\x89\xfb",                           # mov rbx, rdi: status
        call(fork_addr),
        b"\x85\xc0", ("jump", 0x7E, "done"),        # test eax, eax; jle done: the child, or an error
        b"\x41\x89\xc4",                           # mov r12d, eax: pid
        ("label", "wait"),
        b"\x44\x89\xe7", b"\x48\x89\xde", b"\x31\xd2",  # edi = pid; rsi = status; edx = 0
        call(waitpid_addr),
        b"\x83\xf8\xff", ("jump", 0x75, "ok"),     # cmp eax, -1; jne ok
        call(errno_addr),
        b"\x83\x38\x04", ("jump", 0x74, "wait"),   # cmp dword [rax], EINTR; je wait
        b"\xb8\xff\xff\xff\xff", ("jump", 0xEB, "done"),  # mov eax, -1
        ("label", "ok"), b"\x44\x89\xe0",          # mov eax, r12d
        ("label", "done"), b"\x48\x83\xc4\x08", b"\x41\x5c", b"\x5b", b"\xc3",  # restore; ret
    ])


def make_fork_wait():
    """Returns fork_wait(reseed_random) -> (pid, wait status) in the template, (0, 0) in the child,
    for a stateless call the template waits for. Between fork and the child's exit the template
    must write nothing: every page it writes then is still shared with the child, so the write
    splits a 2 MiB page of its heap back into 512 small ones, which every later fork copies and
    every child's exit tears down. Any Python between fork() and waitpid() writes (refcounts,
    the result objects), measured at ~4 split huge pages per call, for good: the template's heap
    then kept ~3,900 small pages instead of ~1,000. So on x86-64 fork and the wait run as one
    native function of 89 bytes (fork_wait_x86_64), called through ctypes, and the template
    returns to Python only when the child is gone. Elsewhere, or if it cannot be set up, the
    same in Python (fork, then waitpid)."""
    def fallback(reseed_random=True):
        pid = fork(reseed_random)
        if pid == 0:
            return 0, 0
        return pid, os.waitpid(pid, 0)[1]

    if not X86_64 or CONF.get("python_fork"):
        return fallback
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        addr = lambda f: ctypes.cast(f, ctypes.c_void_p).value
        code = fork_wait_x86_64(addr(libc.fork), addr(libc.waitpid), addr(libc.__errno_location))
        libc.mmap.restype = ctypes.c_void_p
        libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                              ctypes.c_long]
        libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        mem = libc.mmap(None, PAGE, 0x3, 0x22, -1, 0)  # PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS
        if mem in (None, ctypes.c_void_p(-1).value):
            return fallback
        ctypes.memmove(mem, code, len(code))
        if libc.mprotect(mem, PAGE, 0x5) != 0:  # PROT_READ|PROT_EXEC: never writable and executable
            return fallback
        # PYFUNCTYPE: the GIL stays held, as for make_fork's fork (the zygote has one thread).
        native = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_int))(mem)
        status = ctypes.c_int()
        status_ptr = ctypes.pointer(status)
        errno_location = libc.__errno_location
        errno_location.restype = ctypes.POINTER(ctypes.c_int)
    except Exception:
        return fallback

    def fork_wait(reseed_random=True):
        pid = native(status_ptr)
        if pid < 0:
            err = errno_location()[0]
            raise OSError(err, os.strerror(err))
        if pid == 0:
            reseed(reseed_random)
            return 0, 0
        return pid, status.value

    fork_wait.native = True
    return fork_wait


fork = None  # make_fork(), set by main(): the baseline's one-call interpreter never loads ctypes
fork_wait = None  # make_fork_wait(), set with fork


def align_heap_end():
    """Moves the program break up to a 2 MiB boundary (the pages between stay untouched) and marks
    the heap for huge pages. Run just before the supervisor forks the template: after a fork the
    kernel no longer merges the mappings the fork copied with anything, so the template's heap
    keeps a seam at the break of that moment, and a 2 MiB range straddling a seam can never be
    huge."""
    try:
        import ctypes
        sbrk = ctypes.CDLL(None, use_errno=True).sbrk
        sbrk.restype = ctypes.c_void_p
        sbrk.argtypes = [ctypes.c_ssize_t]
        pad = -(sbrk(0) or 0) % (1 << 21)
        if pad:
            sbrk(pad)  # glibc's malloc treats the gap as another's and grows past it
        mark_huge()  # one mapping up to the boundary: glibc marks only what it grew itself
    except Exception:
        pass


def anonymous_mappings():
    """(start, end) of this process's writable anonymous mappings and heap, in address order."""
    spans = []
    for line in open("/proc/self/maps"):
        f = line.split()
        if len(f) >= 2 and f[1].startswith("rw") and (len(f) < 6 or f[5] == "[heap]"):
            spans.append(tuple(int(v, 16) for v in f[0].split("-")))
    return spans


def mark_huge():
    """MADV_HUGEPAGE on each run of adjacent anonymous mappings, whole, so that they merge where
    the kernel can. Returns libc's madvise."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    runs = []
    for lo, hi in anonymous_mappings():
        if runs and runs[-1][1] == lo:
            runs[-1][1] = hi
        else:
            runs.append([lo, hi])
    for lo, hi in runs:
        libc.madvise(lo, hi - lo, 14)  # MADV_HUGEPAGE: now, and later growth too
    return libc.madvise


def collapse_heap_into_huge_pages():
    """Asks the kernel to back the zygote's anonymous memory with 2 MiB pages (MADV_COLLAPSE, Linux
    6.1+): fork then copies one entry per 2 MiB instead of 512, which on virtual machines more than
    halves the cost of each call's fork and exit. Each mapping is collapsed on its own: one that
    cannot be would stop the rest. Best effort: nothing happens where it is missing."""
    try:
        madvise = mark_huge()
        huge = 1 << 21
        for lo, hi in anonymous_mappings():
            lo, hi = (lo + huge - 1) & ~(huge - 1), hi & ~(huge - 1)
            if hi - lo >= huge:
                madvise(lo, hi - lo, 25)  # MADV_COLLAPSE: now
    except Exception:
        pass


# Writes while a child lives split the zygote's huge pages back into small ones (the page is
# still shared), and each split one costs every later fork 512 page-table entries. Stateless
# calls in a pid namespace write nothing then (fork_wait); sessions and --sandbox=none calls do.
# Collapsing again every this many calls keeps fork cheap: a collapse copies only the regions
# that were split (~0.1-0.2 ms each) and takes the heap's growth too.
RECOLLAPSE_EVERY = 32

# ---------------------------------------------------------------- process hygiene (supervisor)


def live_uid_of(pid):
    """The real uid of a live process (None for zombies and vanished processes)."""
    uid = None
    try:
        with open("/proc/%s/status" % pid, "rb") as f:
            for line in f:
                if line.startswith(b"State:") and b"Z" in line.split()[1]:
                    return None
                if line.startswith(b"Uid:"):
                    uid = int(line.split()[1])
                    break
    except OSError:
        return None
    return uid


def kill_uid(uid, pgid=None):
    """Kills every process of uid in this pid namespace (a child may have left its process group)."""
    if pgid:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except OSError:
            pass
    if not OWN_PIDNS:
        return
    me = os.getpid()
    for _ in range(1000):
        found = False
        for name in os.listdir("/proc"):
            if not name.isdigit() or int(name) in (1, me):
                continue
            owner = live_uid_of(name)
            if owner is None or (DROP and owner != uid) or (not DROP and int(name) in protected_pids()):
                continue
            try:
                os.kill(int(name), signal.SIGKILL)
                found = True
            except OSError:
                pass
        if not found:
            return
        time.sleep(0.001)


def leftovers():
    """Whether a call may have left processes: the template is their subreaper, so any survivor is
    a child of the template, or a descendant of one; sessions are its children too. One small read
    instead of a sweep of /proc. True when it cannot tell."""
    others = calls_pids()
    return others is None or bool(others)


def calls_pids():
    """The template's children that are not sessions (a stateless call's process, or what a call
    left running), read from its children file; None when it cannot be read."""
    if template is None:
        return None
    try:
        fd = os.open(template.children_path, os.O_RDONLY)
        try:
            children = os.read(fd, 1 << 16).split()
        finally:
            os.close(fd)
    except OSError:
        return None
    own = {s.pid for s in sessions.values()}
    return [int(c) for c in children if int(c) not in own]


def protected_pids():
    pids = {s.pid for s in sessions.values()}
    if template is not None:
        pids.add(template.pid)
    return pids


def reap():
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def remove_tree(path):
    try:
        st = os.lstat(path)
    except OSError:
        return
    import stat
    if stat.S_ISDIR(st.st_mode):
        try:
            os.chmod(path, 0o700)
        except OSError:
            pass
        try:
            names = os.listdir(path)
        except OSError:
            names = []
        for n in names:
            remove_tree(os.path.join(path, n))
        try:
            os.rmdir(path)
        except OSError:
            pass
    else:
        try:
            os.unlink(path)
        except OSError:
            pass


def clean_tmp():
    keep = {s.dirname for s in sessions.values()}
    if not TMP or (TMP == "/tmp" and not OWN_PIDNS):
        return  # refuse to wipe anything but a sandbox's own /tmp or a worker's private directory
    for name in os.listdir(TMP):
        if name not in keep:
            remove_tree(os.path.join(TMP, name))


# ---------------------------------------------------------------- output collection (supervisor)


class Output:
    def __init__(self, hard):
        self.bufs = {}
        self.total = 0
        self.hard = hard

    def add(self, fd, data):
        self.bufs.setdefault(fd, bytearray()).extend(data)
        self.total += len(data)
        return self.total > self.hard

    def text(self, fd, cap):
        raw = bytes(self.bufs.get(fd, b""))
        s = raw.decode("utf-8", errors="replace")
        n = len(s)
        if cap > 0 and n > cap:
            head = cap // 2
            s = s[:head] + s[n - (cap - head):]
        return s, n


def drain_nonblocking(fd, out):
    os.set_blocking(fd, False)
    try:
        while True:
            data = os.read(fd, 65536)
            if not data:
                return
            if out.add(fd, data):
                return
    except BlockingIOError:
        return
    finally:
        os.set_blocking(fd, True)


def exit_status(wstatus):
    """(exit_code, signal) from a waitpid status."""
    if os.WIFSIGNALED(wstatus):
        return -os.WTERMSIG(wstatus), os.WTERMSIG(wstatus)
    return os.WEXITSTATUS(wstatus), 0


def classify(exit_code, sig, killed, over_output, out=None, err_fd=None):
    if killed:
        return "timeout"
    if over_output:
        return "output_limit"
    if sig in (signal.SIGXCPU,):
        return "timeout"
    if exit_code != 0 and out is not None and b"MemoryError at line " in out.bufs.get(err_fd, b""):
        return "memory"
    if exit_code == 0:
        return "ok"
    return "error"


def result(req, status, out, exit_code, sig, fds, note=""):
    cap = req["output_chars"]
    stdout, n_out = out.text(fds[0], cap)
    stderr, n_err = out.text(fds[1], cap)
    if sig == signal.SIGXCPU:
        stderr += "CPU time limit of %ss exceeded\n" % req["cpu_s"]
    elif sig == signal.SIGXFSZ:
        stderr += "File size limit of %d MB exceeded\n" % req["file_mb"]
    elif sig and status not in ("timeout", "output_limit"):
        stderr += "Killed by signal %d\n" % sig
    if note:
        stderr += note
    return {"op": "result", "id": req["id"], "status": status, "stdout": stdout, "stderr": stderr,
            "stdout_chars": n_out, "stderr_chars": n_err, "exit_code": exit_code}



# ---------------------------------------------------------------- the supervisor's template


class Template:
    """The supervisor's end of the template: start requests, and the exit statuses it reports."""

    def __init__(self):
        if LINUX:
            s_sock, t_sock = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        else:  # macOS has no unix packet sockets: datagrams keep the messages apart as well
            s_sock, t_sock = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
            for s in (s_sock, t_sock):
                s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 19)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 19)
        # The supervisor is small and single-threaded here: a plain fork is fine, once.
        align_heap_end()
        self.pid = os.fork()
        if self.pid == 0:
            s_sock.close()
            template_main(t_sock)
        t_sock.close()
        self.sock = s_sock
        self.fd = s_sock.fileno()
        self.exits = {}  # pid -> wait status, for the pids in tracked
        self.tracked = set()
        self.run_exit = None  # (pid, wait status) of the last stateless call, when the template waited for it
        msg = self.receive()
        if msg is None or msg[0] != "ready":
            raise RuntimeError("the template did not start")
        self.missing = msg[1]
        self.children_path = "/proc/%d/task/%d/children" % (self.pid, self.pid)
        self.fork_kind = msg[2]  # how stateless calls fork and wait: "native" (fork_wait) or "python"
        self.filtered = msg[3]  # whether the template and its calls run under the syscall filter

    def receive(self):
        """Reads one message; records exits of tracked pids. None when the template is gone."""
        try:
            data = self.sock.recv(1 << 16)
        except OSError:
            return None
        if not data:
            return None
        msg = marshal.loads(data)
        if msg[0] == "exit":
            if msg[3] == "run":
                self.run_exit = msg[1:3]
            elif msg[1] in self.tracked:
                self.exits[msg[1]] = msg[2]
        return msg

    def start(self, req, fds):
        """Asks for a child running req with fds; returns its pid (tracked until its exit is read),
        or None for a stateless call in a pid namespace: the template then reports only its exit
        (run_exit)."""
        self.run_exit = None
        try:
            socket.send_fds(self.sock, [marshal.dumps(req)], fds)
        except OSError as e:
            raise TemplateGone("the template is gone: %s" % e)
        if req[0] == "run" and OWN_PIDNS:
            return None
        while True:
            msg = self.receive()
            if msg is None:
                raise TemplateGone("the template is gone")
            if msg[0] == "pid":
                self.tracked.add(msg[1])
                return msg[1]

    def exit_of(self, pid):
        """The wait status of pid once reported (and forgets pid), else None."""
        status = self.exits.pop(pid, None)
        if status is not None:
            self.tracked.discard(pid)
        return status

    def forget(self, pid):
        self.tracked.discard(pid)
        self.exits.pop(pid, None)


class TemplateGone(Exception):
    pass


template = None  # the Template, set by main()


def limits_of(req, uid, others=0):
    """(uid, memory bytes, cpu s, RLIMIT_NPROC, file bytes) of a child request; others: how many
    processes besides the sandbox's own may share the child's process count."""
    procs = req.get("max_procs") or 0
    if procs and not DROP:
        # Unprivileged: every process here has the same uid. The count is per user namespace
        # (NPROC_BASE), so the child's limit is what is running in it plus the call's allowance.
        procs = NPROC_BASE + others + procs if NPROC_BASE else 0
    return (uid, req["memory_mb"] << 20, req["cpu_s"], procs, req["file_mb"] << 20)


# Processes of the sandbox itself (init, supervisor, template) when an unprivileged sandbox can
# limit a call's processes, else None: set by main().
NPROC_BASE = None


def nproc_base():
    """In an unprivileged sandbox all processes share one uid, so RLIMIT_NPROC can only bound a
    call where the kernel counts processes per user namespace (Linux 5.14+), as it does for the
    sandbox's own namespace: then the processes running in it now, else None (no limit)."""
    if DROP or not OWN_PIDNS:
        return None
    try:
        if tuple(int(v) for v in os.uname().release.split("-")[0].split(".")[:2]) < (5, 14):
            return None
        return sum(1 for name in os.listdir("/proc") if name.isdigit())
    except (ValueError, OSError):
        return None


# ---------------------------------------------------------------- stateless calls


def stdin_pipe(text):
    """A pipe holding the call's standard input (up to 1 MiB), its write end closed."""
    data = (text or "").encode()[: 1 << 20]
    r_in, w_in = os.pipe()
    if len(data) > 65536:
        try:
            import fcntl
            fcntl.fcntl(w_in, 1031, min(len(data) + 4096, 1 << 20))  # F_SETPIPE_SZ
        except OSError:
            pass
    try:
        os.write(w_in, data)
    except BlockingIOError:
        pass
    os.close(w_in)
    return r_in


def precompile(code):
    """marshal of compile_cell(code), or None when the child must compile it (see PRECOMPILE_MAX_CHARS).
    A compile-time warning is the call's output, so code that compiles with one is left to the
    child: in the supervisor, warnings from "<code>" are errors (main; catch_warnings around each
    compile cost ~0.2 ms a call)."""
    if len(code) > PRECOMPILE_MAX_CHARS:
        return None
    try:
        return marshal.dumps(compile_cell(code))
    except BaseException:
        return None


# ---------------------------------------------------------------- waiting for a core


def run_delay_ns(pids):
    """Nanoseconds the tasks pids (the main thread of each) spent runnable but waiting for a core:
    the second field of /proc/PID/schedstat, summed over those still there."""
    total = 0
    for pid in pids:
        try:
            with open("/proc/%d/schedstat" % pid, "rb") as f:
                total += int(f.read().split()[1])
        except (OSError, ValueError, IndexError):
            pass
    return total


class Deadline:
    """A call's wall-clock limit, which Go enforces and asks about when it passes
    ({"op": "deadline"}): the time the call's process waited for a core since the call began (and
    was not granted yet) moves the deadline on by that much ({"op": "extend", "ms"}), so that a call
    times out on its own work and sleeps, not on how busy the machine is; with nothing more waited,
    the call is killed as on {"op": "kill"}. Go bounds the total it grants."""

    GRACE_MS = 20  # granted when the call has no process to ask (see extension_ms)

    def __init__(self, pids, base):
        self.pids, self.base, self.granted = pids, base, 0

    def extension_ms(self):
        if not LINUX:
            return 0  # no /proc/PID/schedstat: the wall clock alone rules
        pids = self.pids()
        if not pids:
            # Not forked yet (the template waits for a core too), or ended a moment ago with its
            # result on the way (a starved supervisor reads the deadline before the exit): a short
            # grace, asked again after it, rather than a timeout for a call that ran to its end.
            return self.GRACE_MS
        waited = run_delay_ns(pids) - self.base - self.granted
        if waited < 1000000:
            return 0
        self.granted += waited
        return waited / 1e6


def stop_or_extend(msg, req, deadline):
    """For a control message during a call: True when it asks to end the call (a kill, or a passed
    deadline with no wait to grant; an extension is answered here)."""
    if msg.get("id") != req["id"] or msg.get("op") not in ("kill", "deadline"):
        return False
    if msg["op"] == "deadline":
        ms = deadline.extension_ms()
        if ms:
            write_msg({"op": "extend", "id": req["id"], "ms": ms})
            return False
    return True


def run_stateless(req):
    code_text = req["code"]
    r_in = stdin_pipe(req.get("stdin"))
    r_out, w_out = os.pipe()
    r_err, w_err = os.pipe()
    fds = [r_in, w_out, w_err]
    source, compiled = code_text, precompile(code_text)
    if compiled is not None and len(compiled) > INLINE_MAX:
        compiled = None
    if len(code_text) + (len(compiled) if compiled else 0) > INLINE_MAX:
        mfd = os.memfd_create("gorstar-code")
        data = code_text.encode("utf-8", errors="surrogatepass")
        while data:
            data = data[os.write(mfd, data):]
        os.lseek(mfd, 0, os.SEEK_SET)
        fds.append(mfd)
        source = None
    child_req = ("run",) + limits_of(req, UID_BASE, len(sessions)) + ("rand" in code_text, compiled, source, "")
    try:
        pid = template.start(child_req, fds)
    finally:
        for fd in fds:  # the child has its own copies
            os.close(fd)
    out = Output(req["output_bytes"])
    killed = over = False
    poller = select.poll()
    for fd in (r_out, r_err, template.fd, CTL_IN):
        poller.register(fd, select.POLLIN)
    open_fds = {r_out, r_err}
    exited = None
    deadline = Deadline(lambda: calls_pids() or [], 0)  # a fresh process: it waited only for this call
    while open_fds or exited is None:
        for fd, _ in poller.poll():
            if fd == CTL_IN:
                msg = read_msg()
                if stop_or_extend(msg, req, deadline):
                    killed = True
                    kill_uid(UID_BASE, pid)
                elif msg.get("op") == "close_session":
                    pending.append(msg)
            elif fd == template.fd:
                if template.receive() is None:
                    raise TemplateGone("the template ended during a call")
                if exited is None:
                    if pid is None and template.run_exit is not None:
                        pid, exited = template.run_exit
                    elif pid is not None:
                        exited = template.exit_of(pid)
                    if exited is not None and leftovers():
                        # Leftover processes of this call could hold the pipes open: end them now.
                        kill_uid(UID_BASE)
            else:
                data = os.read(fd, 65536)
                if not data:
                    poller.unregister(fd)
                    open_fds.discard(fd)
                    os.close(fd)
                elif out.add(fd, data) and not over:
                    over = True
                    kill_uid(UID_BASE, pid)
    reap()
    clean_tmp()
    code, sig = exit_status(exited)
    return result(req, classify(code, sig, killed, over, out, r_err), out, code, sig, (r_out, r_err))


# ---------------------------------------------------------------- sessions


class Session:
    def __init__(self, name, slot):
        self.name = name
        self.slot = slot
        self.uid = UID_BASE + slot
        self.dirname = "session-%d" % slot
        self.last = time.monotonic()
        self.pid = None


sessions = {}
pending = []  # control messages that arrived while a call was running
# Why the worker ended sessions on its own (too many live ones, or idle too long), by name, the
# latest 1024: a later call of one starts a fresh interpreter, and its result says so — otherwise
# the policy would meet a NameError for a variable it set, with no reason given.
ended = {}


def note_ended(name, why):
    ended.pop(name, None)
    ended[name] = why
    while len(ended) > 1024:
        del ended[next(iter(ended))]


def free_slot():
    used = {s.slot for s in sessions.values()}
    for slot in range(1, SESSION_SLOTS + 1):
        if slot not in used:
            return slot
    oldest = min(sessions.values(), key=lambda s: s.last)
    end_session(oldest.name)
    note_ended(oldest.name, "the least recently used of %d live sessions on its worker, exec.sessions_per_worker" % SESSION_SLOTS)
    return oldest.slot


def end_session(name):
    s = sessions.pop(name, None)
    if s is None:
        return
    kill_uid(s.uid, s.pid)
    template.forget(s.pid)
    for fd in (s.ctl_w, s.done_r, s.out_r, s.err_r):
        try:
            os.close(fd)
        except OSError:
            pass
    reap()
    if TMP:
        remove_tree(os.path.join(TMP, s.dirname))


def start_session(name, req):
    slot = free_slot()
    s = Session(name, slot)
    path = os.path.join(TMP, s.dirname)
    remove_tree(path)
    os.mkdir(path, 0o700)
    if DROP:
        os.chown(path, s.uid, s.uid)
    ctl_r, s.ctl_w = os.pipe()
    s.done_r, done_w = os.pipe()
    s.out_r, out_w = os.pipe()
    s.err_r, err_w = os.pipe()
    null = os.open("/dev/null", os.O_RDONLY)
    # Per-call CPU time is not separable in a live process; the wall clock rules.
    limits = limits_of(req, s.uid, SESSION_SLOTS)  # sessions started later share its count
    child_req = ("session",) + limits[:2] + (0,) + limits[3:] + (True, None, None, path)
    fds = [null, out_w, err_w, ctl_r, done_w]
    try:
        s.pid = template.start(child_req, fds)
    finally:
        for fd in fds:
            os.close(fd)
    sessions[name] = s
    return s


def run_session(req):
    name = req["session"]
    s = sessions.get(name)
    fresh = ""
    if s is None:
        if name in ended:
            fresh = ("This session's interpreter had ended (%s): this call ran in a new one, without "
                     "the earlier calls' variables.\n" % ended.pop(name))
        s = start_session(name, req)
    s.last = time.monotonic()
    write_msg({"code": req["code"], "stdin": req.get("stdin") or ""}, s.ctl_w)
    out = Output(req["output_bytes"])
    poller = select.poll()
    for fd in (s.out_r, s.err_r, s.done_r, template.fd, CTL_IN):
        poller.register(fd, select.POLLIN)
    killed = over = False
    code = sig = None
    dead = False
    session_pid = lambda: [s.pid]
    deadline = Deadline(session_pid, run_delay_ns(session_pid()))
    while code is None and not dead:
        for fd, _ in poller.poll():
            if fd == CTL_IN:
                msg = read_msg()
                if stop_or_extend(msg, req, deadline):
                    killed = dead = True
                elif msg.get("op") == "close_session":
                    pending.append(msg)
            elif fd == s.done_r:
                code = read_msg(s.done_r)["exit_code"]
            elif fd == template.fd:
                if template.receive() is None:
                    raise TemplateGone("the template ended during a session call")
                if s.pid in template.exits:
                    dead = True
            else:
                data = os.read(fd, 65536)
                if data and out.add(fd, data) and not over:
                    over = dead = True
    drain_nonblocking(s.out_r, out)
    drain_nonblocking(s.err_r, out)
    fds = (s.out_r, s.err_r)
    if dead:
        kill_uid(s.uid, s.pid)
        status = template.exit_of(s.pid)
        while status is None:  # the template reports the exit once the process is gone
            if template.receive() is None:
                raise TemplateGone("the template ended during a session call")
            status = template.exit_of(s.pid)
        code, sig = exit_status(status)
        end_session(name)
        res = result(req, classify(code, sig, killed, over, out, s.err_r), out, code, sig, fds,
                     fresh + ("" if killed or over else "The session ended; its state is lost.\n"))
    else:
        res = result(req, classify(code, 0, False, False, out, s.err_r), out, code, 0, fds, fresh)
    s.last = time.monotonic()
    return res


def expire_sessions():
    now = time.monotonic()
    for name in [n for n, s in sessions.items() if now - s.last > IDLE_S]:
        end_session(name)
        note_ended(name, "idle for more than %gs, exec.session_idle" % IDLE_S)


# ---------------------------------------------------------------- main loop


AUTOGROUP_PENDING = False  # the sandbox's autogroup still has to be lowered (lower_autogroup)


def lower_autogroup():
    """Gives the sandbox's session, which Go starts for it, the lowest weight among autogroups
    (where the kernel has them): the scheduler shares the CPU between autogroups before it looks at
    the tasks in them, so SCHED_IDLE alone ranks the calls only against each other, and the sandbox
    as a whole would still weigh as much as the gorstar process decoding beside it. The kernel
    takes one such change per tenth of a second from unprivileged processes, machine-wide: a
    refused one is tried again before the next call (and at start, a few times first)."""
    global AUTOGROUP_PENDING
    try:
        fd = os.open("/proc/self/autogroup", os.O_WRONLY)
    except OSError:
        AUTOGROUP_PENDING = False  # no autogroups here: SCHED_IDLE alone ranks the calls
        return
    try:
        os.write(fd, b"19")
        AUTOGROUP_PENDING = False
    except OSError as e:
        AUTOGROUP_PENDING = e.errno == errno.EAGAIN
    finally:
        os.close(fd)


def main():
    global template, NPROC_BASE
    import ctypes
    if sys.path and sys.path[0] in ("", os.getcwd()):
        del sys.path[0]  # never import from the calls' writable directory
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS: no setuid binary can raise a child's rights
    except Exception:
        pass
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    if IDLE and not LINUX:
        os.nice(19)  # no SCHED_IDLE: the lowest priority the system has
    elif IDLE:
        # exec.priority = "idle": the supervisor, the template and every call it forks (the policy
        # is inherited) run only on cores no other process wants.
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
        lower_autogroup()
        for _ in range(10):  # workers starting together meet the kernel's rate limit
            if not AUTOGROUP_PENDING:
                break
            time.sleep(0.05)
            lower_autogroup()
    template = Template()
    NPROC_BASE = nproc_base()
    # In the supervisor only (the template is forked already): see precompile.
    warnings.filterwarnings("error", module="<code>")
    write_msg({"op": "ready", "pid": os.getpid(), "missing": template.missing, "fork": template.fork_kind,
               "syscall_filter": template.filtered})
    poller = select.poll()
    poller.register(CTL_IN, select.POLLIN)
    poller.register(template.fd, select.POLLIN)
    while True:
        while pending:
            msg = pending.pop(0)
            end_session(msg["session"])
        ready = {fd for fd, _ in poller.poll(1000 if sessions else None)}
        if template.fd in ready and template.receive() is None:
            break  # the template is gone: Go restarts the worker
        if CTL_IN not in ready:
            expire_sessions()
            continue
        try:
            msg = read_msg()
        except EOFError:
            break
        op = msg.get("op")
        if AUTOGROUP_PENDING:
            lower_autogroup()
        if op == "run":
            try:
                res = run_session(msg) if msg.get("session") else run_stateless(msg)
            except TemplateGone as e:
                # No answer: Go sees the worker die during the call, restarts it and retries a
                # stateless call once (a session call gets `internal`), as for any dead zygote.
                sys.stderr.write("gorstar zygote: %s\n" % e)
                os._exit(1)
            except Exception as e:  # a bug here must not take the worker down silently
                res = {"op": "result", "id": msg["id"], "status": "internal", "stdout": "",
                       "stderr": "zygote: %s: %s\n" % (type(e).__name__, e), "exit_code": -1,
                       "stdout_chars": 0, "stderr_chars": 0}
            write_msg(res)
        elif op == "close_session":
            end_session(msg["session"])
        expire_sessions()
    for name in list(sessions):
        end_session(name)


main()
