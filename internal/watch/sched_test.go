package watch_test

import "runtime"

func runtime_Gosched() { runtime.Gosched() }
