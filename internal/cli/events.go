package cli

import (
	"github.com/airlockdev/airlock"
	"github.com/airlockdev/airlock/internal/commandline"
)

// withReasons gives each refused event the reason `show` has always
// printed: its cause with its remedy in the command line's terms. The log
// records the cause and the remedy as data; an event recorded with a
// reason of its own keeps it.
func withReasons(evs []airlock.Event) []airlock.Event {
	for i, e := range evs {
		r := e.Refusal()
		if r == nil {
			continue
		}
		if _, ok := e.Detail["reason"]; ok {
			continue
		}
		if _, ok := e.Detail["cause"]; !ok {
			continue
		}
		d := make(map[string]any, len(e.Detail)+1)
		for k, v := range e.Detail {
			d[k] = v
		}
		d["reason"] = commandline.Explain(r)
		evs[i].Detail = d
	}
	return evs
}
