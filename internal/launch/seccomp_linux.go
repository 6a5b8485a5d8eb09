package launch

// The terminal guard. A process whose controlling terminal is the user's
// (or, with CAP_SYS_ADMIN, any terminal it can open) can push bytes into
// the terminal's input queue with ioctl(TIOCSTI), and on a virtual console
// paste into it with ioctl(TIOCLINUX): the user's shell reads them once
// airlock returns and runs them as the user's own command, outside any
// transaction. bubblewrap and flatpak close this the same way: a seccomp
// filter, installed just before exec and inherited by every process the
// command starts, makes both requests fail with EPERM and lets every other
// system call through.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The two requests the guard refuses. They have these values on every
// architecture in ioctlABIs (mips and sparc number them otherwise, and are
// not there).
const (
	tiocsti   = 0x5412
	tioclinux = 0x541c
)

// The loop device requests that attach a file, refused in a watched run:
// the loop driver writes its file from the kernel, which no inotify event
// reports. (Only root can attach one.)
var loopAttach = []uint32{
	0x4c00, // LOOP_SET_FD
	0x4c06, // LOOP_CHANGE_FD
	0x4c0a, // LOOP_CONFIGURE
}

// x32Bit marks an x32 system call, which seccomp sees under
// AUDIT_ARCH_X86_64.
const x32Bit = 0x40000000

// abi is the numbers of the system calls the guards refuse in one system
// call ABI, as seccomp names the ABI (seccomp_data.arch): ioctl(2) for
// the terminal guard; for the link guard of a watched run (Spec.Watched),
// the calls that make a second name for a file or write one unseen by
// inotify.
type abi struct {
	arch   uint32
	ioctls []uint32
	// links are link (where the ABI has it) and linkat: EXDEV.
	links []uint32
	// denied are open_by_handle_at (a file whose directory the kernel
	// may not know) and fanotify_init (whose events carry descriptors
	// that make no events): EPERM.
	denied []uint32
	// absent are io_uring_setup (a ring links and writes without these
	// system calls) and file_setattr (Linux 6.17: a file's flags set by
	// path, with no open and no event, though its ctime moves): ENOSYS,
	// as on a kernel without them, which their users fall back from (to
	// the ioctl on an open file, for the flags). 425 and 469 in every
	// ABI's table.
	absent []uint32
}

// abis are the ABIs of the architectures Go builds airlock for, each
// with its compat ABIs: a process may switch to any ABI its kernel offers
// (an i386 binary on amd64), and must find the guards there too. A
// process under an ABI not listed here (mips) is let through unfiltered
// rather than broken; doctor's `terminal` check then says TIOCSTI is not
// blocked. The numbers are golang.org/x/sys/unix's zsysnum tables'.
var abis = []abi{
	// x32's ioctl is 514; 16 is 64-bit only, and refused for x32 anyway.
	{unix.AUDIT_ARCH_X86_64, []uint32{16, x32Bit | 16, x32Bit | 514}, []uint32{86, 265, x32Bit | 86, x32Bit | 265}, []uint32{304, 300, x32Bit | 304, x32Bit | 300}, []uint32{425, 469, x32Bit | 425, x32Bit | 469}},
	{unix.AUDIT_ARCH_I386, []uint32{54}, []uint32{9, 303}, []uint32{342, 338}, []uint32{425, 469}},
	{unix.AUDIT_ARCH_AARCH64, []uint32{29}, []uint32{37}, []uint32{265, 262}, []uint32{425, 469}},
	{unix.AUDIT_ARCH_ARM, []uint32{54}, []uint32{9, 330}, []uint32{371, 367}, []uint32{425, 469}},
	{unix.AUDIT_ARCH_RISCV64, []uint32{29}, []uint32{37}, []uint32{265, 262}, []uint32{425, 469}},
	{unix.AUDIT_ARCH_LOONGARCH64, []uint32{29}, []uint32{37}, []uint32{265, 262}, []uint32{425, 469}},
	{unix.AUDIT_ARCH_PPC64LE, []uint32{54}, []uint32{9, 294}, []uint32{346, 323}, []uint32{425, 469}},
	{unix.AUDIT_ARCH_PPC64, []uint32{54}, []uint32{9, 294}, []uint32{346, 323}, []uint32{425, 469}},
	{unix.AUDIT_ARCH_PPC, []uint32{54}, []uint32{9, 294}, []uint32{346, 323}, []uint32{425, 469}},
	{unix.AUDIT_ARCH_S390X, []uint32{54}, []uint32{9, 296}, []uint32{336, 332}, []uint32{425, 469}},
	{unix.AUDIT_ARCH_S390, []uint32{54}, []uint32{9, 296}, []uint32{336, 332}, []uint32{425, 469}},
}

// Offsets in struct seccomp_data: nr, arch, then args[6] as 64-bit words
// in the kernel's byte order.
const (
	offNr   = 0
	offArch = 4
	offArg1 = 16 + 8
)

// requestOffset is where the low 32 bits of args[1] (the ioctl request)
// are. The kernel takes the request as an unsigned int and ignores the
// high half, so the filter must too: a request with junk above bit 31 is
// still TIOCSTI.
func requestOffset() uint32 {
	var b [2]byte
	binary.NativeEndian.PutUint16(b[:], 1)
	if b[0] == 1 {
		return offArg1
	}
	return offArg1 + 4
}

// guardFilter is the guards as classic BPF. It reads the ABI first, so
// that a number is only ever compared with the numbering it belongs to,
// then the system call, then (for an ioctl) the request:
//
//	ld arch; jeq each ABI -> its block; ret ALLOW (an unknown ABI)
//	block: ld nr; jeq each ioctl -> req; [jeq each link -> exdev;
//	       jeq each denied -> deny; jeq each absent -> enosys]; ret ALLOW
//	req: ld request; jeq TIOCSTI -> deny; jeq TIOCLINUX -> deny;
//	     [jeq each loop attach -> deny]; ret ALLOW
//	deny: ret ERRNO(EPERM)
//	exdev: ret ERRNO(EXDEV)
//	enosys: ret ERRNO(ENOSYS)
//
// With links, a link fails as one across file systems does, which every
// tool that makes hard links already handles (by copying); a handle
// cannot be opened, nor a fanotify group made, nor a file attached to a
// loop device, as for a process without CAP_DAC_READ_SEARCH and
// CAP_SYS_ADMIN; and io_uring is absent.
func guardFilter(links bool) []unix.SockFilter {
	var p bpf
	p.ld(offArch)
	for i, a := range abis {
		p.jeq(a.arch, "abi"+strconv.Itoa(i))
	}
	p.ret(unix.SECCOMP_RET_ALLOW)
	for i, a := range abis {
		p.label("abi" + strconv.Itoa(i))
		p.ld(offNr)
		for _, nr := range a.ioctls {
			p.jeq(nr, "req")
		}
		if links {
			for _, nr := range a.links {
				p.jeq(nr, "exdev")
			}
			for _, nr := range a.denied {
				p.jeq(nr, "deny")
			}
			for _, nr := range a.absent {
				p.jeq(nr, "enosys")
			}
		}
		p.ret(unix.SECCOMP_RET_ALLOW)
	}
	p.label("req")
	p.ld(requestOffset())
	p.jeq(tiocsti, "deny")
	p.jeq(tioclinux, "deny")
	if links {
		for _, req := range loopAttach {
			p.jeq(req, "deny")
		}
	}
	p.ret(unix.SECCOMP_RET_ALLOW)
	p.label("deny")
	p.ret(unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM))
	p.label("exdev")
	p.ret(unix.SECCOMP_RET_ERRNO | uint32(unix.EXDEV))
	p.label("enosys")
	p.ret(unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS))
	return p.resolve()
}

// bpf assembles a classic BPF program whose conditional jumps name
// labels ahead of them.
type bpf struct {
	prog   []unix.SockFilter
	labels map[string]int
	jumps  map[int]string // instruction -> the label it jumps to when equal
}

func (p *bpf) label(name string) {
	if p.labels == nil {
		p.labels = map[string]int{}
	}
	p.labels[name] = len(p.prog)
}

func (p *bpf) ld(off uint32) { p.prog = append(p.prog, load(off)) }

func (p *bpf) ret(k uint32) { p.prog = append(p.prog, ret(k)) }

func (p *bpf) jeq(k uint32, to string) {
	if p.jumps == nil {
		p.jumps = map[int]string{}
	}
	p.jumps[len(p.prog)] = to
	p.prog = append(p.prog, unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: k})
}

func (p *bpf) resolve() []unix.SockFilter {
	for at, to := range p.jumps {
		target, ok := p.labels[to]
		skip := target - at - 1
		if !ok || skip < 0 || skip > 255 {
			panic("launch: seccomp filter jump to " + to + " out of range") // the tables above grew too large
		}
		p.prog[at].Jt = uint8(skip)
	}
	return p.prog
}

func load(off uint32) unix.SockFilter {
	return unix.SockFilter{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: off}
}

func ret(k uint32) unix.SockFilter {
	return unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: k}
}

// errNoSeccomp means the kernel has no seccomp filters at all: the command
// then runs unguarded (doctor says so), as it would anywhere else on such
// a kernel, rather than not at all.
var errNoSeccomp = errors.New("this kernel has no seccomp filters")

// guardTerminal installs the guard on the calling thread, which stays
// locked to this goroutine so that the command is forked or exec'd from
// it: a filter belongs to the thread that installed it (and to the
// processes it starts from then on), not to the whole process.
//
// no_new_privs is set only when the kernel asks for it: without
// CAP_SYS_ADMIN in the current user namespace it takes a filter only from
// a thread that can gain no privileges through execve. The helper has
// CAP_SYS_ADMIN where it runs (as root, or in its own user namespace), so
// as root the command keeps setuid programs (sudo) working; a non-root
// user's command runs in a user namespace, where a setuid program gains
// nothing anyway.
func guardTerminal(links bool) error {
	prog := guardFilter(links)
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	runtime.LockOSThread()
	err := setFilter(&fprog)
	if errors.Is(err, unix.EACCES) {
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			return fmt.Errorf("set no_new_privs: %w", err)
		}
		err = setFilter(&fprog)
	}
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
		return fmt.Errorf("%w (prctl(PR_SET_SECCOMP): %v)", errNoSeccomp, err)
	}
	if err != nil {
		return fmt.Errorf("prctl(PR_SET_SECCOMP): %w", err)
	}
	return nil
}

// setFilter is prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, p), called
// through Syscall itself: only there does a pointer passed as a uintptr
// stay valid (and p stay put) until the kernel has read it.
func setFilter(p *unix.SockFprog) error {
	if _, _, e := unix.Syscall(unix.SYS_PRCTL, unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(p))); e != 0 {
		return e
	}
	return nil
}

// helperGuard installs the guard in the helper just before it starts the
// command, and refuses to start it (fail closed) when the kernel has
// seccomp filters but would not take this one.
func helperGuard(links bool) {
	err := guardTerminal(links)
	if err == nil || (errors.Is(err, errNoSeccomp) && !links) {
		return
	}
	helperFail(msgGuard, err, "the command was not started: airlock could not install the seccomp filter that keeps it from typing into your terminal (ioctl TIOCSTI and TIOCLINUX): "+err.Error()+
		". If airlock runs inside a sandbox or container that forbids prctl(PR_SET_SECCOMP), run it outside that, or allow it there; `airlock doctor` reports this as its terminal check")
}

// LinkGuard reports whether this kernel takes seccomp filters, and so
// whether Spec.Watched can be honoured: prctl(PR_SET_SECCOMP,
// SECCOMP_MODE_FILTER) with no program fails with EFAULT where filters
// exist and EINVAL where they do not (libseccomp's probe).
func LinkGuard() bool {
	_, _, e := unix.Syscall(unix.SYS_PRCTL, unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, 0)
	return e == unix.EFAULT
}

// probeGuard is the helper in modeGuard: it installs the guard as a run
// would, proves that TIOCSTI is then refused (on a descriptor that is no
// terminal, so nothing is typed anywhere: unguarded, that is EBADF), and
// exits. It never returns.
func probeGuard() {
	if err := guardTerminal(false); err != nil {
		helperFail(msgSetup, err, err.Error())
	}
	const noFD = ^uintptr(0)
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, noFD, tiocsti, 0); e != unix.EPERM {
		helperFail(msgSetup, e, fmt.Sprintf("the filter was installed, but ioctl(TIOCSTI) still gets %q, not EPERM: this architecture (%s) is not one the filter knows", e.Error(), runtime.GOARCH))
	}
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, noFD, unix.TIOCGWINSZ, 0); e != unix.EBADF {
		helperFail(msgSetup, e, fmt.Sprintf("the filter refuses more than it should: ioctl(TIOCGWINSZ) gets %q, not EBADF", e.Error()))
	}
	os.Exit(0)
}

// TerminalSupport reports whether the command of a run (and a validator)
// is kept from typing into a terminal here, by installing the guard in a
// throw-away helper, the way a run does, and trying it; reason says how,
// or why not.
func TerminalSupport() (ok bool, reason string) {
	if !initCalled.Load() {
		return false, reasonNoInit
	}
	d, err := os.MkdirTemp("", "airlock-probe-")
	if err != nil {
		return false, "probe directory: " + err.Error()
	}
	defer os.Remove(d)
	how, err := probe(helperJob{mode: modeGuard, staged: d}, nsAttempts(false, true, true))
	if err != nil {
		return false, err.Error() + legacyTIOCSTI()
	}
	return true, "a seccomp filter, set up in a private " + how + ", makes ioctl TIOCSTI and TIOCLINUX fail with EPERM for the command and everything it starts"
}

// legacyTIOCSTI says, for a machine where the guard cannot be had, whether
// the kernel refuses TIOCSTI to unprivileged processes by itself
// (dev.tty.legacy_tiocsti = 0, Linux 6.2 and later).
func legacyTIOCSTI() string {
	b, err := os.ReadFile("/proc/sys/dev/tty/legacy_tiocsti")
	if err != nil {
		return ""
	}
	return "; dev.tty.legacy_tiocsti = " + strings.TrimSpace(string(b)) + " (0: the kernel refuses TIOCSTI to a process without CAP_SYS_ADMIN by itself)"
}
