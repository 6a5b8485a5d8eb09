package state

import (
	"context"
	"errors"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/airlockdev/airlock/internal/testbin"
)

func TestAllocatePorts(t *testing.T) {
	s := openStore(t)
	for _, id := range []string{"a", "b", "c"} {
		if _, err := s.Create(id); err != nil {
			t.Fatal(err)
		}
	}
	none := func(*TxIndex) ([]int, error) { return nil, nil }
	p0, err := s.AllocatePorts(t.Context(), "a", none)
	if err != nil {
		t.Fatal(err)
	}
	if p0 < 20000 || p0 > 60000 || p0%10 != 0 {
		t.Fatalf("port base %d", p0)
	}
	tx, _ := s.Tx("a")
	if got, ok, err := tx.PortBase(); err != nil || !ok || got != p0 {
		t.Fatalf("PortBase = %d %v %v, want %d", got, ok, err, p0)
	}

	// Taken by another open transaction: skipped.
	p1, err := s.AllocatePorts(t.Context(), "b", func(*TxIndex) ([]int, error) { return []int{p0}, nil })
	if err != nil {
		t.Fatal(err)
	}
	if p1 <= p0 {
		t.Fatalf("allocated %d although %d is taken", p1, p0)
	}

	// One port of the range is in use by some process: the range is skipped.
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p0+7))
	if err != nil {
		testbin.Missing(t, "cannot listen on the loopback interface: %v", err)
	}
	defer l.Close()
	p2, err := s.AllocatePorts(t.Context(), "c", none)
	if err != nil {
		t.Fatal(err)
	}
	if p2 == p0 {
		t.Fatalf("allocated %d although %d is listened on", p2, p0+7)
	}

	tx, _ = s.Create("d")
	if _, ok, err := tx.PortBase(); ok || err != nil {
		t.Fatalf("PortBase before allocation = %v %v", ok, err)
	}
	if _, err := s.AllocatePorts(t.Context(), "missing", none); err == nil {
		t.Fatal("allocated ports for a missing transaction")
	}
	boom := errors.New("boom")
	if _, err := s.AllocatePorts(t.Context(), "d", func(*TxIndex) ([]int, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Fatalf("taken() error not reported: %v", err)
	}
}

func TestAllocatePortsWaitsForGlobalLock(t *testing.T) {
	s := openStore(t)
	if _, err := s.Create("a"); err != nil {
		t.Fatal(err)
	}
	unlock, err := s.LockGlobal(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if _, err := s.AllocatePorts(ctx, "a", nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("AllocatePorts under a held global lock = %v", err)
	}
}
