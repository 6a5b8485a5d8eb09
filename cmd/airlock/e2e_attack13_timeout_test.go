//go:build linux

package main_test

import (
	"strings"
	"testing"
)

// attack13 found both of these failing: a batch of two or more lands
// through a repository of its own (remote_batch.go), whose bounds were
// never set, unlike a lone landing's, so --remote-timeout did not apply
// to its fetch and push and a silent remote hung it.

// A batch whose push the server never answers: every member is refused
// RemoteTimeout and kept; main does not move; the kept batch lands later.
func TestE2EAttack13BatchPushTimeoutKeepsEveryMember(t *testing.T) {
	bare, before, hst, proxy, ids := cutBatchHost(t, holdCommands)
	r := hst.run(nil, append([]string{"land", "-q", "--remote", "cut", "--branch", "main", "--remote-timeout", "5s"}, ids...)...)
	select {
	case <-proxy.cut:
	default:
		t.Fatalf("the proxy never held the push\n%s", r)
	}
	if h := gitIn(t, bare, "rev-parse", "main"); h != before {
		t.Fatalf("main moved to %s", h)
	}
	if r.Code != 75 || strings.Count(r.Stdout, "refused (RemoteTimeout)") != len(ids) {
		t.Errorf("a batch whose push timed out: want exit 75, every member refused RemoteTimeout\n%s", r)
	}
	for _, id := range ids {
		if s := statusOf(t, hst, id); s != "refused" {
			t.Errorf("%s is %s, want refused and kept", id, s)
		}
	}
	if r := hst.run(nil, append([]string{"land", "-q", "--remote", "origin", "--branch", "main"}, ids...)...); r.Code != 0 || strings.Count(r.Stdout, "landed   ") != len(ids) {
		t.Errorf("the kept batch, landed once the remote answers:\n%s", r)
	}
}

// A fetch timeout in a batch: every member refused RemoteTimeout, kept.
func TestE2EAttack13BatchFetchTimeoutKeepsEveryMember(t *testing.T) {
	srv := startSilent(t)
	hst, one := silentHost(t, srv.url("git"))
	two := hst.open(map[string]string{"b.txt": "b\n"})
	r := hst.run(nil, "land", "-q", "--remote", "origin", "--branch", "main", "--remote-timeout", "3s", one, two)
	if r.Code != 75 || strings.Count(r.Stdout, "refused (RemoteTimeout)") != 2 {
		t.Errorf("a batch whose fetch timed out: want exit 75, both refused RemoteTimeout\n%s", r)
	}
	for _, id := range []string{one, two} {
		if s := statusOf(t, hst, id); s != "refused" {
			t.Errorf("%s is %s, want refused and kept", id, s)
		}
	}
}
