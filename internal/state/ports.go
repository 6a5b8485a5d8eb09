package state

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"path/filepath"
	"strconv"
)

// PortFile is the state file, inside a transaction, that holds the first of
// its 10 ports.
const PortFile = "port"

// Port range for AIRLOCK_PORT_BASE: bases 20000, 20010, …, 60000.
const (
	firstPort = 20000
	lastPort  = 60000
	portSpan  = 10
)

// LockGlobal takes the store-wide lock that serialises id and port
// allocation across airlock processes, waiting until ctx is done.
func (s *Store) LockGlobal(ctx context.Context) (unlock func(), err error) {
	if err := checkDir(s.dir); err != nil {
		return nil, stateErr("state directory", s.dir, err)
	}
	return lockFile(ctx, filepath.Join(s.dir, "lock"))
}

// AllocatePorts picks the port base of transaction txID: the first P in
// 20000, 20010, … 60000 whose range P..P+9 overlaps no range in taken() and
// whose ten ports can all be listened on at 127.0.0.1 right now. It records
// P in the transaction's PortFile before releasing the global lock, so that
// a concurrent allocation whose taken() reads PortFile of the open
// transactions cannot hand out the same range.
//
// taken reads the transactions ix does not know to be settled, and marks
// those it finds settled (see TxIndex), which is saved before the lock is
// released. txID itself is never taken as settled.
func (s *Store) AllocatePorts(ctx context.Context, txID string, taken func(ix *TxIndex) ([]int, error)) (int, error) {
	t, err := s.Tx(txID)
	if err != nil {
		return 0, err
	}
	unlock, err := s.LockGlobal(ctx)
	if err != nil {
		return 0, err
	}
	defer unlock()
	ix, err := s.loadTxIndex()
	if err != nil {
		return 0, fmt.Errorf("allocate ports for %s: %w", txID, err)
	}
	ix.forget(txID)
	var held []int
	if taken != nil {
		if held, err = taken(ix); err != nil {
			return 0, fmt.Errorf("allocate ports for %s: %w", txID, err)
		}
	}
	if err := ix.save(); err != nil {
		return 0, fmt.Errorf("allocate ports for %s: %w", txID, err)
	}
	for p := firstPort; p <= lastPort; p += portSpan {
		if overlaps(p, held) || !listenable(p) {
			continue
		}
		// Visible before the lock is released; durable with the open
		// record, which holds the same port and whose publication syncs
		// the directory (a reader falls back on the record's port).
		if err := t.WriteUnsynced(PortFile, p); err != nil {
			return 0, err
		}
		return p, nil
	}
	return 0, fmt.Errorf("allocate ports for %s: no free range of %d ports between %d and %d on 127.0.0.1; settle open transactions (airlock list) or free ports", txID, portSpan, firstPort, lastPort+portSpan-1)
}

func overlaps(p int, held []int) bool {
	for _, q := range held {
		if p < q+portSpan && q < p+portSpan {
			return true
		}
	}
	return false
}

// listenable reports whether every port of the range can be bound now.
func listenable(p int) bool {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for i := range portSpan {
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p+i))
		if err != nil {
			return false
		}
		ls = append(ls, l)
	}
	return true
}

// PortBase reads the port base AllocatePorts recorded; ok is false if none
// was allocated.
func (t *Tx) PortBase() (port int, ok bool, err error) {
	if err := t.Read(PortFile, &port); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return 0, false, nil
		}
		return 0, false, err
	}
	if port < firstPort || port > lastPort {
		return 0, false, &CorruptError{Path: t.Path(PortFile), Err: fmt.Errorf("port base %d outside %d-%d", port, firstPort, lastPort)}
	}
	return port, true, nil
}
