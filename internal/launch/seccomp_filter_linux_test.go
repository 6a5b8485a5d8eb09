package launch

import (
	"encoding/binary"
	"testing"

	"golang.org/x/sys/unix"
)

// runFilter runs the classic BPF program prog, as the kernel would, on a
// struct seccomp_data for system call nr of ABI arch with request as its
// second argument, and returns the action. It knows the instructions
// terminalFilter uses, and fails the test on any other.
func runFilter(t *testing.T, prog []unix.SockFilter, arch, nr uint32, request uint64) uint32 {
	t.Helper()
	data := make([]byte, 64)
	binary.NativeEndian.PutUint32(data[offNr:], nr)
	binary.NativeEndian.PutUint32(data[offArch:], arch)
	binary.NativeEndian.PutUint64(data[offArg1:], request)
	var acc uint32
	for pc := 0; pc < len(prog); pc++ {
		in := prog[pc]
		switch in.Code {
		case unix.BPF_LD | unix.BPF_W | unix.BPF_ABS:
			acc = binary.NativeEndian.Uint32(data[in.K:])
		case unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K:
			if acc == in.K {
				pc += int(in.Jt)
			} else {
				pc += int(in.Jf)
			}
		case unix.BPF_RET | unix.BPF_K:
			return in.K
		default:
			t.Fatalf("instruction %d: unknown code %#x", pc, in.Code)
		}
	}
	t.Fatal("the program ends without a verdict")
	return 0
}

// TestTerminalFilter: under every ABI the filter knows, ioctl TIOCSTI and
// TIOCLINUX (whatever the high half of the request holds) get EPERM, and
// every other request, every other system call and every ABI it does not
// know are allowed. The kernel runs only this machine's ABIs; this runs
// them all.
func TestTerminalFilter(t *testing.T) {
	for _, links := range []bool{false, true} {
		testGuardFilter(t, links)
	}
}

func testGuardFilter(t *testing.T, links bool) {
	prog := guardFilter(links)
	deny := uint32(unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM))
	exdev := uint32(unix.SECCOMP_RET_ERRNO | uint32(unix.EXDEV))
	allow := uint32(unix.SECCOMP_RET_ALLOW)
	for _, abi := range abis {
		// Without links, link and open_by_handle_at pass; with them,
		// they fail as a link across file systems and a handle without
		// CAP_DAC_READ_SEARCH do.
		wantLink, wantDenied, wantAbsent := allow, allow, allow
		if links {
			wantLink, wantDenied, wantAbsent = exdev, deny, uint32(unix.SECCOMP_RET_ERRNO|uint32(unix.ENOSYS))
		}
		for _, nr := range abi.links {
			if got := runFilter(t, prog, abi.arch, nr, 0); got != wantLink {
				t.Errorf("links %v: arch %#x link nr %#x: %#x, want %#x", links, abi.arch, nr, got, wantLink)
			}
		}
		for _, nr := range abi.denied {
			if got := runFilter(t, prog, abi.arch, nr, 0); got != wantDenied {
				t.Errorf("links %v: arch %#x denied nr %#x: %#x, want %#x", links, abi.arch, nr, got, wantDenied)
			}
		}
		for _, nr := range abi.absent {
			if got := runFilter(t, prog, abi.arch, nr, 0); got != wantAbsent {
				t.Errorf("links %v: arch %#x absent nr %#x: %#x, want %#x", links, abi.arch, nr, got, wantAbsent)
			}
		}
		for _, nr := range abi.ioctls {
			for _, req := range loopAttach {
				if got := runFilter(t, prog, abi.arch, nr, uint64(req)); got != wantDenied {
					t.Errorf("links %v: arch %#x ioctl %#x: %#x, want %#x", links, abi.arch, req, got, wantDenied)
				}
			}
			for _, req := range []uint64{tiocsti, tioclinux, 0xffffffff00000000 | tiocsti} {
				if got := runFilter(t, prog, abi.arch, nr, req); got != deny {
					t.Errorf("arch %#x nr %#x request %#x: %#x, want EPERM", abi.arch, nr, req, got)
				}
			}
			if got := runFilter(t, prog, abi.arch, nr, unix.TIOCGWINSZ); got != allow {
				t.Errorf("arch %#x nr %#x TIOCGWINSZ: %#x, want allowed", abi.arch, nr, got)
			}
		}
		// A system call that is no ioctl, with TIOCSTI's number as its
		// second argument (a write of 0x5412 bytes), passes.
		if got := runFilter(t, prog, abi.arch, 1, tiocsti); got != allow {
			t.Errorf("arch %#x nr 1: %#x, want allowed", abi.arch, got)
		}
	}
	if got := runFilter(t, prog, unix.AUDIT_ARCH_MIPS, 4054, tiocsti); got != allow {
		t.Errorf("an unknown ABI: %#x, want allowed", got)
	}
}
