//go:build !linux

package launch_test

func playPart() {}
