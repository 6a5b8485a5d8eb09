package main_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/airlockdev/airlock"
	"github.com/airlockdev/airlock/internal/buildinfo"
	"github.com/airlockdev/airlock/internal/jsonout"
)

// jsonTypes are the Go types airlock's --json output is printed from, each
// with the docs/json.md sections that document it: the first is its own;
// members of the others are added to it (show's transaction object, run's
// exit_code) and are checked under their own type.
var jsonTypes = []struct {
	v        any
	sections []string
}{
	{jsonout.Open{}, []string{"airlock open --json"}},
	{airlock.Info{}, []string{"transaction object", "airlock show id --json"}}, // diff_digest: only show's
	{jsonout.Show{}, []string{"airlock show id --json", "transaction object"}},
	{airlock.Event{}, []string{"event"}},
	{jsonout.Settle{}, []string{"settle result", "airlock run --json -- command"}},
	{jsonout.Log{}, []string{"airlock log --json"}},
	{jsonout.RemoteLog{}, []string{"airlock log --remote remote --branch branch --json"}},
	{jsonout.Diff{}, []string{"airlock diff id --json"}},
	{airlock.Rebased{}, []string{"airlock rebase id --json"}},
	{jsonout.Checkpoint{}, []string{"checkpoint"}},
	{jsonout.Checkpoints{}, []string{"airlock checkpoints id --json"}},
	{jsonout.Rewound{}, []string{"airlock rewind id n --json"}},
	{jsonout.Land{}, []string{"airlock land id... --json"}},
	{jsonout.Landed{}, []string{"landed transaction"}},
	{jsonout.GC{}, []string{"airlock gc --json"}},
	{jsonout.GCItem{}, []string{"gc item"}},
	{jsonout.PooledTree{}, []string{"pooled tree"}},
	{jsonout.Recover{}, []string{"airlock recover --json"}},
	{jsonout.Doctor{}, []string{"airlock doctor --json"}},
	{airlock.Check{}, []string{"check"}},
	{jsonout.Verify{}, []string{"airlock receipt verify file|id --json"}},
	{jsonout.Init{}, []string{"airlock init claude|codex|gemini --json"}},
	{buildinfo.Info{}, []string{"airlock version --json"}},
}

// jsonTypesElsewhere are the member tables no Go type here describes, and
// what holds them to the doc.
var jsonTypesElsewhere = map[string]string{
	// airlock.Receipt prints internal/receipt's file form (its own wire
	// type, unexported); TestE2EJSONMatchesDocs checks real receipts.
	"receipt": "TestE2EJSONMatchesDocs",
}

// alwaysSet are members whose tag would leave them out when zero, but that
// the doc rightly calls always present where it documents them: the
// output never has them zero there.
var alwaysSet = map[string]string{
	// Info leaves it out for list, which does not measure it; show's Info
	// comes from InfoWithDigest, which always does.
	"jsonout.Show.diff_digest": "InfoWithDigest sets it",
}

// jsonField is a member as a Go type prints it.
type jsonField struct {
	typ     reflect.Type
	omitted bool // left out when zero (omitempty, omitzero, or inside a nil embedded pointer)
}

// jsonFields are t's members by JSON name, as encoding/json prints them:
// embedded structs' promoted, "-" and unexported fields left out.
func jsonFields(t reflect.Type, omitted bool) map[string]jsonField {
	out := map[string]jsonField{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if tag == "-" || !f.IsExported() && !f.Anonymous {
			continue
		}
		if f.Anonymous && name == "" {
			et, ptr := f.Type, false
			if et.Kind() == reflect.Pointer {
				et, ptr = et.Elem(), true
			}
			if et.Kind() == reflect.Struct {
				for n, jf := range jsonFields(et, omitted || ptr) {
					out[n] = jf
				}
				continue
			}
		}
		if name == "" {
			name = f.Name
		}
		o := omitted || slices.Contains(strings.Split(opts, ","), "omitempty") || slices.Contains(strings.Split(opts, ","), "omitzero")
		out[name] = jsonField{typ: f.Type, omitted: o}
	}
	return out
}

// TestJSONDocMatchesTypes holds docs/json.md to the Go types the output is
// printed from: every member a type prints is in its section, of the type
// the doc says; every member the section names is a field; and a member
// the doc says is present "only" sometimes is one the type's tag leaves
// out when it is zero, and no other. Every member table has its type.
func TestJSONDocMatchesTypes(t *testing.T) {
	d := readJSONDoc(t)
	covered := map[string]bool{}
	for _, jt := range jsonTypes {
		typ := reflect.TypeOf(jt.v)
		fields := jsonFields(typ, false)
		for _, s := range jt.sections {
			if _, ok := d.sections[s]; !ok {
				t.Fatalf("%s: docs/json.md has no member table under a heading %q", typ, s)
			}
			covered[s] = true
		}
		own := d.sections[jt.sections[0]]
		for _, name := range sortedFieldNames(fields) {
			f := fields[name]
			dm, ok := own[name]
			if !ok {
				for _, s := range jt.sections[1:] {
					if dm, ok = d.sections[s][name]; ok {
						break
					}
				}
				if !ok {
					t.Errorf("%s: member %q is not documented (%s)", typ, name, strings.Join(jt.sections, " + "))
					continue
				}
				if !docTypeFits(d, dm.typ, f.typ) {
					t.Errorf("%s.%s: the doc says %s, the field is %s", typ, name, dm.typ, f.typ)
				}
				continue
			}
			if !docTypeFits(d, dm.typ, f.typ) {
				t.Errorf("%s.%s: the doc says %s, the field is %s", typ, name, dm.typ, f.typ)
			}
			if dm.optional != f.omitted && (dm.optional || alwaysSet[typ.String()+"."+name] == "") {
				t.Errorf("%s.%s: the doc says present %s, the field's tag %s", typ, name,
					map[bool]string{true: "only sometimes", false: "always"}[dm.optional],
					map[bool]string{true: "leaves it out when zero", false: "always prints it"}[f.omitted])
			}
		}
		for name := range own {
			if _, ok := fields[name]; !ok {
				t.Errorf("%s: docs/json.md documents %q (%s), which the type does not print", typ, name, jt.sections[0])
			}
		}
	}
	for s := range d.sections {
		if !covered[s] && jsonTypesElsewhere[s] == "" {
			t.Errorf("docs/json.md documents %q, but no Go type of jsonTypes prints it", s)
		}
	}
}

func sortedFieldNames(m map[string]jsonField) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

var (
	bytesType   = reflect.TypeOf(airlock.Bytes(""))
	timeType    = reflect.TypeOf(time.Time{})
	rawType     = reflect.TypeOf(json.RawMessage(nil))
	receiptType = reflect.TypeOf(airlock.Receipt{})
)

// docTypeFits reports whether a field of Go type ft can print the doc's
// type typ.
func docTypeFits(d *jsonDoc, typ string, ft reflect.Type) bool {
	if rest, ok := strings.CutSuffix(typ, " or null"); ok {
		typ = rest
	}
	for ft.Kind() == reflect.Pointer {
		ft = ft.Elem()
	}
	switch typ {
	case "string", "digest":
		return ft.Kind() == reflect.String && ft != bytesType
	case "number":
		return ft.Kind() >= reflect.Int && ft.Kind() <= reflect.Float64
	case "bool":
		return ft.Kind() == reflect.Bool
	case "time":
		return ft == timeType
	case "raw bytes":
		return ft == bytesType
	case "object":
		return ft.Kind() == reflect.Map || ft.Kind() == reflect.Struct
	case "receipt":
		return ft == receiptType || ft == rawType
	}
	if elem, ok := strings.CutPrefix(typ, "list of "); ok {
		return ft.Kind() == reflect.Slice && ft != rawType && docTypeFits(d, singular(elem), ft.Elem())
	}
	if _, ok := d.sections[typ]; ok {
		return ft.Kind() == reflect.Struct
	}
	return false
}
