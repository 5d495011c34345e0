"""The kubelet's exec endpoint, as the apiserver proxies pods/exec to it:
GET|POST /exec/{namespace}/{pod}/{container}?command=...&input=&output=&error=&tty=
(the apiserver's names for pods/exec's stdin, stdout, stderr)
upgraded to a WebSocket with the channel protocol of Kubernetes' remotecommand
(v4.channel.k8s.io, and v5.channel.k8s.io where the client offers it): each binary
message starts with its channel byte, 0 stdin, 1 stdout, 2 stderr, 3 error (a
metav1.Status JSON when the command ends), 4 resize ({"Width": W, "Height": H});
v5 adds 255 (the client closed one of its streams: [255, channel]).

The command runs in the container's working directory with its environment, on a
pseudo-terminal when tty=true. kubectl and tandem both talk to this through the real
apiserver."""
import base64
import fcntl
import hashlib
import json
import os
import pty
import select
import ssl
import struct
import subprocess
import termios
import threading

from kapi import log

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
PROTOCOLS = ("v5.channel.k8s.io", "v4.channel.k8s.io")
STDIN, STDOUT, STDERR, ERROR, RESIZE, CLOSE = 0, 1, 2, 3, 4, 255


def _unmask(data, mask):
    """XOR with the 4-byte mask, as one big-integer operation (a byte loop takes seconds for 100 MB)."""
    n = len(data)
    if n == 0 or mask == b"\0\0\0\0":
        return data
    key = (mask * (n // 4 + 1))[:n]
    return (int.from_bytes(data, "big") ^ int.from_bytes(key, "big")).to_bytes(n, "big")


class Socket:
    """WebSocket framing over the handler's (TLS) connection: the server side, so
    it reads masked frames and writes unmasked ones."""

    def __init__(self, rfile, wfile):
        self.rfile, self.wfile = rfile, wfile
        self.lock = threading.Lock()

    def _read(self, n):
        data = b""
        while len(data) < n:
            more = self.rfile.read(n - len(data))
            if not more:
                raise EOFError
            data += more
        return data

    def read(self):
        """The next data message as (opcode, payload); (8, b"") at a close."""
        message, first_op = b"", None
        while True:
            b0, b1 = self._read(2)
            fin, op = b0 & 0x80, b0 & 0x0F
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._read(8))[0]
            mask = self._read(4) if b1 & 0x80 else b"\0\0\0\0"
            payload = _unmask(self._read(n), mask)
            if op == 8:
                return 8, b""
            if op == 9:  # ping: pong with the same payload
                self.send(payload, 10)
                continue
            if op == 10:
                continue
            if op != 0:
                first_op = op
            message += payload
            if fin:
                return first_op, message

    def send(self, payload, op=2):
        n = len(payload)
        if n < 126:
            head = struct.pack(">BB", 0x80 | op, n)
        elif n < 65536:
            head = struct.pack(">BBH", 0x80 | op, 126, n)
        else:
            head = struct.pack(">BBQ", 0x80 | op, 127, n)
        with self.lock:
            self.wfile.write(head + payload)
            self.wfile.flush()


def handshake(handler):
    """Answers the upgrade; returns the protocol chosen, or None after an error answer."""
    key = handler.headers.get("Sec-WebSocket-Key")
    offered = [p.strip() for p in handler.headers.get("Sec-WebSocket-Protocol", "").split(",") if p.strip()]
    if handler.headers.get("Upgrade", "").lower() != "websocket" or not key:
        handler._text(400, "exec needs a WebSocket upgrade (the tandem node agent speaks no SPDY)\n")
        return None
    chosen = next((p for p in PROTOCOLS if p in offered), None)
    if chosen is None:
        handler._text(400, f"none of the offered protocols {offered} is served; {list(PROTOCOLS)} are\n")
        return None
    accept = base64.b64encode(hashlib.sha1((key + GUID).encode()).digest()).decode()
    handler.send_response(101, "Switching Protocols")
    handler.send_header("Upgrade", "websocket")
    handler.send_header("Connection", "Upgrade")
    handler.send_header("Sec-WebSocket-Accept", accept)
    handler.send_header("Sec-WebSocket-Protocol", chosen)
    handler.end_headers()
    handler.wfile.flush()
    return chosen


def status(code):
    if code == 0:
        return {"metadata": {}, "status": "Success"}
    return {
        "metadata": {},
        "status": "Failure",
        "message": f"command terminated with non-zero exit code: exit code {code}",
        "reason": "NonZeroExitCode",
        "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]},
    }


def set_size(fd, payload):
    try:
        size = json.loads(payload)
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", int(size["Height"]), int(size["Width"]), 0, 0))
    except (ValueError, KeyError, TypeError, OSError):
        pass


def exec_in(handler, run, query):
    """Runs the command of `query` beside `run` (a ContainerRun) over the upgraded connection."""
    def flag(name, kubelet_name):
        # The apiserver renames them for the kubelet: stdin->input, stdout->output, stderr->error.
        value = query.get(kubelet_name, query.get(name, ["false"]))[0]
        return value in ("true", "1")

    command = query.get("command", [])
    if not command:
        return handler._text(400, "exec needs at least one command= parameter\n")
    tty = flag("tty", "tty")
    want_in, want_out, want_err = flag("stdin", "input"), flag("stdout", "output"), flag("stderr", "error") and not tty
    proto = handshake(handler)
    if proto is None:
        return
    ws = Socket(handler.rfile, handler.wfile)
    log(f"exec in {run.spec.get('name')}: {command} tty={tty} ({proto})")
    command = run.enter() + command  # into the container's mount namespace (its emptyDir volumes)
    master = None
    try:
        if tty:
            master, slave = pty.openpty()
            proc = subprocess.Popen(command, cwd=run.cwd, env=run.env, stdin=slave, stdout=slave, stderr=slave,
                                    start_new_session=True, close_fds=True,
                                    preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0))
            os.close(slave)
            outs = {master: STDOUT}
            stdin_fd = master
        else:
            proc = subprocess.Popen(command, cwd=run.cwd, env=run.env,
                                    stdin=subprocess.PIPE if want_in else subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
            outs = {proc.stdout.fileno(): STDOUT, proc.stderr.fileno(): STDERR}
            stdin_fd = proc.stdin.fileno() if want_in else None
    except OSError as e:
        ws.send(bytes([ERROR]) + json.dumps({"metadata": {}, "status": "Failure", "message": str(e),
                                             "reason": "InternalError"}).encode())
        ws.send(b"", 8)
        return
    for ch in (STDOUT, STDERR) if not tty else (STDOUT,):  # the kubelet's "channel ready" messages
        ws.send(bytes([ch]))

    def pump_input():
        nonlocal stdin_fd
        try:
            while True:
                op, msg = ws.read()
                if op == 8 or op is None:
                    break
                if not msg:
                    continue
                ch, data = msg[0], msg[1:]
                if ch == STDIN and stdin_fd is not None and data:
                    os.write(stdin_fd, data)
                elif ch == RESIZE and tty:
                    set_size(master, data)
                elif ch == CLOSE and data[:1] == bytes([STDIN]) and stdin_fd is not None and not tty:
                    # Through its file object: os.close() here left proc.stdin to close the same number
                    # again when collected, by then perhaps another thread's pipe (podnet's `ip` calls
                    # failed with EBADF, and pods with NetworkNotReady).
                    stdin_fd = None
                    proc.stdin.close()
        except (EOFError, OSError, ssl.SSLError, ValueError):
            pass

    threading.Thread(target=pump_input, daemon=True).start()
    open_fds = dict(outs)
    while open_fds:
        ready, _, _ = select.select(list(open_fds), [], [], 0.2)
        for fd in ready:
            try:
                data = os.read(fd, 65536)
            except OSError:  # a pty's master reads EIO once the process has gone
                data = b""
            if data:
                if (want_out and open_fds[fd] == STDOUT) or (want_err and open_fds[fd] == STDERR):
                    ws.send(bytes([open_fds[fd]]) + data)
            else:
                del open_fds[fd]
        if tty and proc.poll() is not None and not ready:
            break
    code = proc.wait()
    if code < 0:
        code = 128 - code
    log(f"exec in {run.spec.get('name')}: exited {code}")
    try:
        ws.send(bytes([ERROR]) + json.dumps(status(code)).encode())
        ws.send(struct.pack(">H", 1000), 8)
    except (OSError, ssl.SSLError):
        pass
    if master is not None:
        os.close(master)
    handler.close_connection = True


def attach_to(handler, run, query):
    """Attaches to `run` (a running ContainerRun) as the kubelet's attach does: its output from now on
    (the runtime's log, stdout and stderr together as without a terminal) on the stdout channel, and our
    stdin to its stdin when the container was made with `stdin: true`; ends with a Success status when
    the container exits (the exit code is in the pod's status, as with a real kubelet)."""
    def flag(name, kubelet_name):
        value = query.get(kubelet_name, query.get(name, ["false"]))[0]
        return value in ("true", "1")

    want_in, want_out = flag("stdin", "input"), flag("stdout", "output")
    if want_in and run.stdin is None:
        return handler._text(400, "the container was not created with stdin: true; it cannot take input\n")
    proto = handshake(handler)
    if proto is None:
        return
    ws = Socket(handler.rfile, handler.wfile)
    log(f"attach to {run.spec.get('name')} ({proto}) stdin={want_in}")
    for ch in (STDOUT, STDERR):
        ws.send(bytes([ch]))
    done = threading.Event()

    def pump_input():
        try:
            while not done.is_set():
                op, msg = ws.read()
                if op == 8 or op is None:
                    break
                if msg and msg[0] == STDIN and want_in and len(msg) > 1:
                    run.stdin.write(msg[1:])
                    run.stdin.flush()
        except (EOFError, OSError, ssl.SSLError, ValueError):
            pass

    threading.Thread(target=pump_input, daemon=True).start()
    exited = run.exited
    try:
        with open(run.log_path(), "rb") as f:
            f.seek(0, os.SEEK_END)
            while True:
                data = f.read(65536)
                if data:
                    if want_out:
                        ws.send(bytes([STDOUT]) + data)
                    continue
                if exited.is_set():
                    data = f.read()
                    if data and want_out:
                        ws.send(bytes([STDOUT]) + data)
                    break
                exited.wait(0.1)
        ws.send(bytes([ERROR]) + json.dumps(status(0)).encode())
        ws.send(struct.pack(">H", 1000), 8)
    except (OSError, ssl.SSLError):
        pass
    done.set()
    handler.close_connection = True
