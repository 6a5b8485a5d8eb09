package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ParseDuration reads a span of time as gc_keep and gc --older-than take
// it: Go's duration syntax ("36h", "90m", "0"), or a whole number of days
// ("7d"), since a grace is most often said in days and Go's syntax has
// no unit for them. A negative span is refused: nothing is kept for less
// than no time.
func ParseDuration(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	if n, ok := strings.CutSuffix(t, "d"); ok {
		days, err := strconv.ParseUint(n, 10, 32)
		if err != nil || days > 100*365 {
			return 0, fmt.Errorf("%q is not a duration: a number of days is a whole number up to 36500 followed by d (\"14d\"), or use Go's form (\"36h\", \"90m\")", s)
		}
		return time.Duration(days) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(t)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration (want a number of days such as \"7d\", or Go's form such as \"36h\", \"90m\", \"0\")", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("%q is negative; a duration is 0 or more", s)
	}
	return d, nil
}
