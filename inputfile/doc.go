// Package inputfile opens the files a user names (plans, variable files, datasets, traces,
// evaluation sets) so that reading them ends in bounded time and memory: a named pipe, a
// device such as /dev/zero, a socket or a folder is refused at once instead of being read
// (a pipe would block until a writer comes, /dev/zero never ends), a file over the caller's
// size limit is refused before it is read, and text that holds NUL bytes or is not UTF-8
// (a database, an executable) is refused with the offset of the first bad byte.
//
// It leaves the parsing to the packages that own each format, and the size limits to them.
package inputfile
