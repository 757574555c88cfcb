package dist

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The rendezvous of a torchrun-style launch. torchrun starts the processes and tells each its
// rank and rank 0's address (MASTER_ADDR, MASTER_PORT), and nothing more: no MPI world exists.
// Rank 0 listens there, every other rank connects, and the collectives go through rank 0 (a
// star): each rank sends its part, rank 0 combines the parts in rank order and sends the result
// back. That carries control messages — NCCL's unique id, the world's line, step statistics,
// barriers — not a model's gradients: rank 0's link would carry all of them. A world on this
// Comm is a bootstrap (World.Bootstrap); the bulk moves to the GPUs' NCCL/RCCL (package gpu).

// RendezvousEnv overrides the rendezvous address ("host:port") of a torchrun-style launch.
const RendezvousEnv = "GORSTAR_RENDEZVOUS"

// RendezvousTimeoutEnv is how long, in seconds, the ranks wait for each other at the rendezvous
// (default 300).
const RendezvousTimeoutEnv = "GORSTAR_RENDEZVOUS_TIMEOUT"

const defaultRendezvousTimeout = 300 * time.Second

// helloWait is how long rank 0 waits for a connection's hello.
const helloWait = 10 * time.Second

// rendezvousMagic opens every hello, so a stray connection (another program, another job's port)
// is told apart from a rank.
const rendezvousMagic = "gorstar-rdv1"

// rendezvousAddr is where rank 0 listens: GORSTAR_RENDEZVOUS, else MASTER_ADDR:MASTER_PORT —
// or the port after it when torchrun's agent serves its own store on MASTER_PORT
// (TORCHELASTIC_USE_AGENT_STORE=True, torch 2.4 and later).
func rendezvousAddr(p Place, getenv func(string) string) (string, error) {
	if a := getenv(RendezvousEnv); a != "" {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return "", fmt.Errorf("%s=%q: want host:port", RendezvousEnv, a)
		}
		return a, nil
	}
	host, port, err := net.SplitHostPort(p.Master)
	if p.Master == "" || err != nil || host == "" || port == "" {
		return "", fmt.Errorf("no rendezvous address: set MASTER_ADDR and MASTER_PORT (torchrun does), or %s=host:port", RendezvousEnv)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("MASTER_PORT=%q: want a port number", port)
	}
	if strings.EqualFold(getenv("TORCHELASTIC_USE_AGENT_STORE"), "true") {
		if n == 65535 {
			return "", fmt.Errorf("MASTER_PORT=65535 is torchrun's store and no port follows it: set %s=host:port", RendezvousEnv)
		}
		n++
	}
	return net.JoinHostPort(host, strconv.Itoa(n)), nil
}

// rendezvousTimeout reads RendezvousTimeoutEnv.
func rendezvousTimeout(getenv func(string) string) (time.Duration, error) {
	s := getenv(RendezvousTimeoutEnv)
	if s == "" {
		return defaultRendezvousTimeout, nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || !(v > 0) {
		return 0, fmt.Errorf("%s=%q: want seconds > 0", RendezvousTimeoutEnv, s)
	}
	return time.Duration(v * float64(time.Second)), nil
}

// tcpComm is Comm through rank 0 over TCP. Calls are serialized (any goroutine may call); every
// rank must call the collectives in the same order with the same lengths, which rank 0 checks:
// a mismatch is an error on every rank naming both calls.
type tcpComm struct {
	mu    sync.Mutex
	rank  int
	size  int
	addr  string
	seq   uint64
	peers []net.Conn // rank 0: peers[r] is rank r's connection (peers[0] nil)
	root  net.Conn   // the other ranks: the connection to rank 0
	err   error      // the first failure; every later call returns it
}

var _ Comm = (*tcpComm)(nil)

// The collectives, as they travel in a frame's header.
const (
	opAllReduceF32 = iota + 1
	opAllReduceF64
	opBroadcast
	opAllGather
	opBarrier
	opError // rank 0 → the others: the collective failed; the payload says why
)

var opNames = map[byte]string{opAllReduceF32: "AllReduceF32", opAllReduceF64: "AllReduceF64", opBroadcast: "Broadcast",
	opAllGather: "AllGather", opBarrier: "Barrier", opError: "error"}

// header starts every frame: the collective, its sequence number, the caller's buffer length
// (checked equal on every rank), the broadcast's root, and the bytes of payload that follow.
type header struct {
	op      byte
	root    uint32
	seq     uint64
	n       uint64
	payload uint64
}

const headerLen = 1 + 4 + 8 + 8 + 8

func (h header) describe() string {
	if h.op == opBroadcast {
		return fmt.Sprintf("%s of %d bytes from rank %d (collective #%d)", opNames[h.op], h.n, h.root, h.seq)
	}
	return fmt.Sprintf("%s of %d bytes (collective #%d)", opNames[h.op], h.n, h.seq)
}

func writeFrame(c net.Conn, h header, payload []byte) error {
	h.payload = uint64(len(payload))
	var b [headerLen]byte
	b[0] = h.op
	binary.LittleEndian.PutUint32(b[1:], h.root)
	binary.LittleEndian.PutUint64(b[5:], h.seq)
	binary.LittleEndian.PutUint64(b[13:], h.n)
	binary.LittleEndian.PutUint64(b[21:], h.payload)
	if _, err := c.Write(b[:]); err != nil {
		return err
	}
	_, err := c.Write(payload)
	return err
}

// maxPayload bounds a frame a peer announces (1 GiB): a corrupt or foreign stream is an error,
// not an allocation of its length.
const maxPayload = 1 << 30

func readFrame(c net.Conn) (header, []byte, error) {
	var b [headerLen]byte
	if _, err := io.ReadFull(c, b[:]); err != nil {
		return header{}, nil, err
	}
	h := header{op: b[0], root: binary.LittleEndian.Uint32(b[1:]), seq: binary.LittleEndian.Uint64(b[5:]),
		n: binary.LittleEndian.Uint64(b[13:]), payload: binary.LittleEndian.Uint64(b[21:])}
	if opNames[h.op] == "" || h.payload > maxPayload {
		return header{}, nil, fmt.Errorf("not a gorstar collective (op %d, %d bytes)", h.op, h.payload)
	}
	payload := make([]byte, h.payload)
	if _, err := io.ReadFull(c, payload); err != nil {
		return header{}, nil, err
	}
	return h, payload, nil
}

// hello is what a rank sends on connecting: the magic, its rank and the world size it was told.
func hello(rank, size int) []byte {
	b := []byte(rendezvousMagic)
	b = binary.LittleEndian.AppendUint32(b, uint32(rank))
	return binary.LittleEndian.AppendUint32(b, uint32(size))
}

// rendezvous joins the TCP world of p at addr within timeout: rank 0 listens and waits for every
// other rank, the others connect (retrying while rank 0 is not up yet).
func rendezvous(p Place, addr string, timeout time.Duration) (*tcpComm, error) {
	if p.Rank == 0 {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, fmt.Errorf("rendezvous: rank 0 listens at %s: %v (a port in use? set %s=host:port)", addr, err, RendezvousEnv)
		}
		defer ln.Close()
		return acceptRanks(ln, p.Size, timeout)
	}
	return dialRoot(addr, p.Rank, p.Size, timeout)
}

// acceptRanks is rank 0's side: it takes one connection from each of ranks 1..size-1 on ln,
// answers each hello with an empty frame once all are there, and gives up after timeout naming
// the ranks that did not come.
func acceptRanks(ln net.Listener, size int, timeout time.Duration) (*tcpComm, error) {
	c := &tcpComm{rank: 0, size: size, addr: ln.Addr().String(), peers: make([]net.Conn, size)}
	deadline := time.Now().Add(timeout)
	if tl, ok := ln.(*net.TCPListener); ok {
		_ = tl.SetDeadline(deadline)
	}
	fail := func(err error) (*tcpComm, error) {
		c.closeConns()
		return nil, err
	}
	for arrived := 1; arrived < size; {
		conn, err := ln.Accept()
		if err != nil {
			var missing []string
			for r := 1; r < size; r++ {
				if c.peers[r] == nil {
					missing = append(missing, strconv.Itoa(r))
				}
			}
			if errors.Is(err, os.ErrDeadlineExceeded) {
				err = fmt.Errorf("%d of %d ranks there after %v; missing rank(s) %s", arrived, size, timeout, strings.Join(missing, ", "))
			}
			return fail(fmt.Errorf("rendezvous at %s: %v", c.addr, err))
		}
		// A rank says hello at once; a stranger that says nothing is dropped after helloWait
		// rather than holding the rendezvous up.
		hd := time.Now().Add(helloWait)
		if hd.After(deadline) {
			hd = deadline
		}
		_ = conn.SetDeadline(hd)
		b := make([]byte, len(rendezvousMagic)+8)
		if _, err := io.ReadFull(conn, b); err != nil || string(b[:len(rendezvousMagic)]) != rendezvousMagic {
			conn.Close() // not a rank: a port scan, another program
			continue
		}
		r, n := int(binary.LittleEndian.Uint32(b[len(rendezvousMagic):])), int(binary.LittleEndian.Uint32(b[len(rendezvousMagic)+4:]))
		switch {
		case n != size:
			conn.Close()
			return fail(fmt.Errorf("rendezvous at %s: rank %d says the world has %d ranks, rank 0 was told %d", c.addr, r, n, size))
		case r <= 0 || r >= size:
			conn.Close()
			return fail(fmt.Errorf("rendezvous at %s: a rank %d connected to a world of %d", c.addr, r, size))
		case c.peers[r] != nil:
			conn.Close()
			return fail(fmt.Errorf("rendezvous at %s: rank %d connected twice (two jobs on one port?)", c.addr, r))
		}
		c.peers[r] = conn
		arrived++
	}
	for r := 1; r < size; r++ {
		_ = c.peers[r].SetDeadline(time.Time{})
		if err := writeFrame(c.peers[r], header{op: opBarrier}, nil); err != nil {
			return fail(fmt.Errorf("rendezvous at %s: rank %d: %v", c.addr, r, err))
		}
	}
	return c, nil
}

// dialRoot is a rank's side: connect to rank 0 at addr (retrying until timeout, since rank 0 may
// start later), say hello, and wait for rank 0's word that the world is complete.
func dialRoot(addr string, rank, size int, timeout time.Duration) (*tcpComm, error) {
	deadline := time.Now().Add(timeout)
	var conn net.Conn
	for {
		var err error
		conn, err = net.DialTimeout("tcp", addr, time.Until(deadline))
		if err == nil {
			break
		}
		if time.Now().Add(100 * time.Millisecond).After(deadline) {
			return nil, fmt.Errorf("rendezvous: rank 0 at %s not reached within %v: %v", addr, timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	_ = conn.SetDeadline(deadline)
	if _, err := conn.Write(hello(rank, size)); err != nil {
		conn.Close()
		return nil, fmt.Errorf("rendezvous at %s: %v", addr, err)
	}
	if h, _, err := readFrame(conn); err != nil || h.op != opBarrier {
		conn.Close()
		if errors.Is(err, os.ErrDeadlineExceeded) {
			err = fmt.Errorf("the world was not complete within %v", timeout)
		} else if err == nil || closed(err) {
			err = errors.New("rank 0 closed the connection (it failed: see its error)")
		}
		return nil, fmt.Errorf("rendezvous at %s: %v", addr, err)
	}
	_ = conn.SetDeadline(time.Time{})
	return &tcpComm{rank: rank, size: size, addr: addr, root: conn}, nil
}

// collective runs one collective: every rank's part goes to rank 0 (its own without the
// network), combine makes the result from the parts in rank order, and the result comes back
// to every rank. The first failure ends the Comm: a collective half done on some ranks cannot be
// resumed.
func (c *tcpComm) collective(op byte, root int, n int, part []byte, combine func(parts [][]byte) []byte) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return nil, c.err
	}
	c.seq++
	h := header{op: op, root: uint32(root), seq: c.seq, n: uint64(n)}
	var out []byte
	var err error
	if c.rank == 0 {
		out, err = c.gather(h, part, combine)
	} else {
		out, err = c.exchange(h, part)
	}
	if err != nil {
		c.err = fmt.Errorf("%s: %w", h.describe(), err)
		c.closeConns()
		return nil, c.err
	}
	return out, nil
}

// gather is rank 0's half of a collective.
func (c *tcpComm) gather(h header, part []byte, combine func(parts [][]byte) []byte) ([]byte, error) {
	parts := make([][]byte, c.size)
	parts[0] = part
	var bad error
	for r := 1; r < c.size; r++ {
		got, payload, err := readFrame(c.peers[r])
		if err != nil {
			if closed(err) {
				err = errors.New("closed its connection (it exited: see its error)")
			}
			bad = fmt.Errorf("rank %d: %v", r, err)
			break
		}
		if got.op != h.op || got.seq != h.seq || got.n != h.n || got.root != h.root {
			bad = fmt.Errorf("rank %d called %s where rank 0 called %s", r, got.describe(), h.describe())
			break
		}
		parts[r] = payload
	}
	if bad != nil {
		msg := []byte(bad.Error())
		for r := 1; r < c.size; r++ {
			_ = writeFrame(c.peers[r], header{op: opError, seq: h.seq}, msg)
		}
		return nil, bad
	}
	out := combine(parts)
	for r := 1; r < c.size; r++ {
		if err := writeFrame(c.peers[r], h, out); err != nil {
			return nil, fmt.Errorf("rank %d: %v", r, err)
		}
	}
	return out, nil
}

// exchange is the other ranks' half: send the part, receive the result.
func (c *tcpComm) exchange(h header, part []byte) ([]byte, error) {
	if err := writeFrame(c.root, h, part); err != nil {
		if closed(err) {
			return nil, errors.New("rank 0 closed the connection (it failed: see its error)")
		}
		return nil, fmt.Errorf("to rank 0: %v", err)
	}
	got, out, err := readFrame(c.root)
	switch {
	case closed(err):
		return nil, errors.New("rank 0 closed the connection (it failed: see its error)")
	case err != nil:
		return nil, fmt.Errorf("from rank 0: %v", err)
	case got.op == opError:
		return nil, errors.New(string(out))
	}
	return out, nil
}

// closed reports whether err is the other end going away: an orderly close, a reset (a process
// killed with unread data), or this end closed.
func closed(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed)
}

func (c *tcpComm) closeConns() {
	for _, p := range c.peers {
		if p != nil {
			p.Close()
		}
	}
	if c.root != nil {
		c.root.Close()
	}
}

// close ends the Comm; later calls fail.
func (c *tcpComm) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closeConns()
	if c.err == nil {
		c.err = errors.New("the collectives are closed")
	}
}

// AllReduceF32 sums in rank order on rank 0, in float32: ((b₀ + b₁) + b₂) …, the same bits on
// every rank.
func (c *tcpComm) AllReduceF32(buf []float32) error { return sumOver(c, opAllReduceF32, buf) }

// AllReduceF64 is AllReduceF32 in float64.
func (c *tcpComm) AllReduceF64(buf []float64) error { return sumOver(c, opAllReduceF64, buf) }

// sumOver replaces buf on every rank with its sum over the ranks, added up in rank order on rank
// 0 and sent back (little-endian on the wire).
func sumOver[T float32 | float64](c *tcpComm, op byte, buf []T) error {
	part, err := binary.Append(nil, binary.LittleEndian, buf)
	if err != nil {
		return err
	}
	out, err := c.collective(op, 0, len(part), part, func(parts [][]byte) []byte {
		sum, v := make([]T, len(buf)), make([]T, len(buf))
		for _, p := range parts { // every part has len(part) bytes: rank 0 checked the lengths
			_, _ = binary.Decode(p, binary.LittleEndian, v)
			for i := range sum {
				sum[i] += v[i]
			}
		}
		out, _ := binary.Append(nil, binary.LittleEndian, sum)
		return out
	})
	if err != nil {
		return err
	}
	_, err = binary.Decode(out, binary.LittleEndian, buf)
	return err
}

// Broadcast: root's bytes travel to rank 0 (the other ranks send none) and from there to all.
func (c *tcpComm) Broadcast(buf []byte, root int) error {
	if root < 0 || root >= c.size {
		return fmt.Errorf("broadcast from rank %d in a world of %d", root, c.size)
	}
	var part []byte
	if c.rank == root {
		part = buf
	}
	out, err := c.collective(opBroadcast, root, len(buf), part, func(parts [][]byte) []byte { return parts[root] })
	if err != nil {
		return err
	}
	copy(buf, out)
	return nil
}

func (c *tcpComm) AllGather(send []byte) ([]byte, error) {
	return c.collective(opAllGather, 0, len(send), send, func(parts [][]byte) []byte {
		out := make([]byte, 0, len(send)*len(parts))
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	})
}

func (c *tcpComm) Barrier() error {
	_, err := c.collective(opBarrier, 0, 0, nil, func([][]byte) []byte { return nil })
	return err
}
