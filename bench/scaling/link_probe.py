#!/usr/bin/python3
"""What a simulated link really carries: one TCP stream's throughput and the
round-trip time of 1-byte messages between two hosts of bench/cluster.

    link_probe.py serve PORT                 (on host 1)
    link_probe.py measure ADDR PORT MBYTES   (on host 0) -> RESULT {json}

The shaped rate is an upper bound: on a small machine the kernel's TCP work
(copies, checksums) shares the CPUs with everything else.
"""
import json
import socket
import sys
import time


def serve(port):
    with socket.create_server(("0.0.0.0", port)) as server:
        conn, _ = server.accept()
        with conn:
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            while True:  # ping-pong phase: echo single bytes until a 'q'
                b = conn.recv(1)
                if b == b"q" or not b:
                    break
                conn.sendall(b)
            received = 0
            while True:
                chunk = conn.recv(1 << 20)
                if not chunk:
                    break
                received += len(chunk)
            conn.sendall(str(received).encode())


def measure(addr, port, mbytes):
    deadline = time.time() + 10
    while True:
        try:
            conn = socket.create_connection((addr, port))
            break
        except OSError:
            if time.time() > deadline:
                raise
            time.sleep(0.05)
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    rtts = []
    for _ in range(200):
        t = time.perf_counter()
        conn.sendall(b"p")
        conn.recv(1)
        rtts.append(time.perf_counter() - t)
    conn.sendall(b"q")
    buf = b"x" * (1 << 20)
    t = time.perf_counter()
    for _ in range(mbytes):
        conn.sendall(buf)
    conn.shutdown(socket.SHUT_WR)
    received = int(conn.recv(64).decode())
    seconds = time.perf_counter() - t
    rtts.sort()
    print("RESULT " + json.dumps({"gbit_per_s": received * 8 / seconds / 1e9,
                                  "rtt_us": rtts[len(rtts) // 2] * 1e6}), flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(int(sys.argv[2]))
    else:
        measure(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
