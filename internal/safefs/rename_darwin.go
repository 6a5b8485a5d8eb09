package safefs

import "golang.org/x/sys/unix"

const (
	renameExchange  = unix.RENAME_SWAP
	renameNoReplace = unix.RENAME_EXCL
)

func renameat2(fromfd int, from string, tofd int, to string, flags uint) error {
	return unix.RenameatxNp(fromfd, from, tofd, to, uint32(flags))
}
