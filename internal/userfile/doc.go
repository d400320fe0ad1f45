// Package userfile reads and replaces files whose paths a user gave: plugin
// bundles, plugin directories' files, key files.
//
// What it guarantees:
//   - Reading never blocks on the kind of file: a path is opened without
//     waiting (O_NONBLOCK: a named pipe with no writer does not hang the
//     command, which then ignored SIGINT and SIGTERM), and anything but a
//     regular file — a named pipe, a device, a socket, a directory — is
//     refused by a stat of the opened descriptor, so nothing can be swapped
//     in between the check and the read. Symbolic links are followed (a
//     link to a bundle is a bundle), except by ReadIn, which stays inside a
//     directory.
//   - Reading stops at a caller's limit: a file that is larger, or grows
//     while being read, is refused without being held in memory.
//   - Replace writes through a new, exclusively created temporary file in
//     the target's directory (never through a fixed name someone could have
//     pointed elsewhere), syncs it and renames it over the target. When the
//     target is a symbolic link, the file it leads to is replaced and the
//     link stays.
//   - Update holds an exclusive advisory lock (flock) on the target from
//     before it reads until after it renames, so two toolhost processes
//     updating one file run one after the other and neither's change is
//     lost.
//
// What it does not do: it does not stop a process that ignores the
// advisory lock, and it does not check who owns a file or who can read it
// (see the CLI's checks of its home and of key files).
package userfile
