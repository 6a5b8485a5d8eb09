// Package fsclock measures how finely a file system's timestamps tell two
// moments apart, so that a stat fact is trusted only where a later write
// could not have left it as it was.
//
// A file system keeps each timestamp to a step of its own (1 ns on ext4
// with large inodes, btrfs, xfs and tmpfs; 100 ns on NTFS; 1 s on ext4
// made with 128-byte inodes, ext2, ext3, NFSv3 servers that keep seconds
// and HFS+; 2 s for FAT's mtime), and stamps changes from a clock that
// itself moves in steps (the kernel's coarse clock: a scheduler tick,
// 1 to 10 ms). A file changed at a moment T and measured soon after can
// be written again within the same step without any stat fact moving. So
// a stat fact proves "a later write would show" only for a ctime older
// than the moment it was measured by more than the file system's window:
// its stored step, plus two of its clock's steps (one for the step itself,
// one for the coarse clock lagging the real one), plus any lag of the file
// system's clock behind this machine's that the probe saw (a file server).
// ctime counts, not mtime: mtime is whatever a writer sets (cp -p, rsync
// -t, tar x), while no call sets ctime, except on file systems that keep
// none (FAT, exFAT: ctime is mtime there), where stat proves nothing.
//
// [Measure] probes a directory the caller owns: it sets a file's mtime to
// a moment with every nanosecond digit set and reads back what was kept
// (the stored step), then writes the file again and again, for at most
// 200 ms, and takes the smallest step between the ctimes it stamps (the
// clock's step, never finer than the kernel's coarse clock). What cannot
// be measured is assumed coarse ([Assume]): a 2 s step. The caller caches
// the result per file system ([Key]: the file system's id and type, which
// survive a reboot, and the kernel release, since a new kernel may stamp
// differently).
//
// Its limits: a file system that keeps finer timestamps in memory than on
// disk (and loses them when the inode is evicted) shows the finer ones to
// the probe; a file server whose clock later drifts behind this machine's
// by more than the probe saw makes the window too small. Keep clocks in
// sync (NTP).
package fsclock
