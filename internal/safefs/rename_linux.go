package safefs

import "golang.org/x/sys/unix"

const (
	renameExchange  = unix.RENAME_EXCHANGE
	renameNoReplace = unix.RENAME_NOREPLACE
)

func renameat2(fromfd int, from string, tofd int, to string, flags uint) error {
	return unix.Renameat2(fromfd, from, tofd, to, flags)
}
