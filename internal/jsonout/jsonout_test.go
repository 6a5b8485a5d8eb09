package jsonout_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/airlockdev/airlock"
	"github.com/airlockdev/airlock/internal/jsonout"
)

// These objects were printed from maps, whose members encoding/json sorts:
// their fields stay in that order, so that the bytes do not change.
func TestMembersInThePrintedOrder(t *testing.T) {
	for _, v := range []any{
		jsonout.Open{}, jsonout.Settle{}, jsonout.Log{}, jsonout.RemoteLog{}, jsonout.Diff{},
		jsonout.Land{}, jsonout.Landed{}, jsonout.GC{}, jsonout.GCItem{}, jsonout.PooledTree{},
		jsonout.Recover{}, jsonout.Doctor{}, jsonout.Verify{}, jsonout.Init{},
	} {
		var names []string
		var walk func(reflect.Type)
		walk = func(typ reflect.Type) {
			for i := range typ.NumField() {
				f := typ.Field(i)
				if f.Anonymous {
					walk(f.Type.Elem())
					continue
				}
				name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
				names = append(names, name)
			}
		}
		walk(reflect.TypeOf(v))
		if !slices.IsSorted(names) {
			t.Errorf("%T: members %v are not in the order a map printed them", v, names)
		}
	}
}

// A settle result prints every member a refusal, a branch and run's exit
// code bring, and nothing of them when there are none.
func TestSettleMembers(t *testing.T) {
	members := func(s *jsonout.Settle) []string {
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		var keys []string
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		return keys
	}
	say := func(r *airlock.Refusal) string { return "said: " + r.Reason }
	plain := jsonout.NewSettle(&airlock.Result{TxID: "t", Outcome: airlock.Committed}, say)
	if got, want := members(plain), []string{"added", "deleted", "modified", "outcome", "receipt", "receipt_path", "repeat", "tx"}; !slices.Equal(got, want) {
		t.Errorf("a plain commit: %v, want %v", got, want)
	}
	code := 0
	refused := jsonout.NewSettle(&airlock.Result{TxID: "t", Outcome: airlock.Refused, Refusal: &airlock.Refusal{Kind: airlock.ValidationFailed, Reason: "r"},
		Branch: &airlock.Branch{Name: "airlock/t"}}, say)
	refused.ExitCode = &code
	want := []string{"added", "branch", "branch_head", "deleted", "exit_code", "modified", "outcome", "reason", "receipt", "receipt_path", "refusal", "refused_paths", "repeat", "tx"}
	if got := members(refused); !slices.Equal(got, want) {
		t.Errorf("a refusal naming no paths, with a branch, from run: %v, want %v", got, want)
	}
	if refused.Reason != "said: r" || refused.RefusedPaths == nil {
		t.Errorf("reason %q, refused_paths %v: want the front end's words and []", refused.Reason, refused.RefusedPaths)
	}
}
