package sandbox

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// image is a linear memory the host owns, built so that putting it back
// to a saved state costs in proportion to the pages a call touched, not
// to its size: the memory's whole page limit is reserved as one private
// mapping; after snapshot, its first pages map a memfd that holds the
// contents at that moment (copy-on-write: writes stay private to this
// mapping) and the rest is anonymous (zero); reset discards every private
// page with MADV_DONTNEED, after which reads see the memfd's contents and
// zeros again. This is how wasmtime's copy-on-write memory images make a
// used instance fresh.
//
// Small memories are restored by copying instead: on this project's CI
// machine (a nested-virtualization microVM) a page fault costs 10-20 µs,
// so three touched pages cost more to fault back in than copying 128 KiB
// (RATIONALE.md, "Snapshots instead of fresh instances").
//
// An image implements experimental.LinearMemory; wazero keeps the slice
// Reallocate returns, which stays valid across snapshot and reset because
// both keep the mapping's address.
type image struct {
	mem      []byte // the whole reservation
	size     uint64 // the wasm memory's current size
	snapSize uint64 // the size at snapshot; 0 before
	fd       int    // the memfd holding the snapshot; -1 before
	saved    []byte // the snapshot of a small memory, restored by copying
	copyMax  uint64 // memories up to this size are restored by copying
	// src maps the memfd read-only: the snapshot, where reset copies the
	// pages calls wrote back from (nil: reset only discards).
	src     []byte
	entries []byte   // reset's buffer for /proc/self/pagemap entries
	private []uint64 // reset's buffer for the private pages' indexes
	maxCopy uint64   // maxCopiedPages (tests lower it)
}

// maxCopiedPages bounds the private pages reset copies back from the
// snapshot; with more, it discards them all instead (see reset).
const maxCopiedPages = 1024

// defaultCopyMax is the largest memory restored by copying rather than
// by discarding pages.
const defaultCopyMax = 256 << 10

// newImage reserves limit bytes (rounded up to whole pages) of address
// space; pages get memory only once touched. A memory of up to copyMax
// bytes at snapshot is restored by copying.
func newImage(limit, copyMax uint64) (*image, error) {
	n := pageAlign(limit)
	if n == 0 || n > 1<<32 {
		return nil, fmt.Errorf("sandbox: cannot reserve a linear memory of %d bytes", limit)
	}
	mem, err := unix.Mmap(-1, 0, int(n), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		return nil, fmt.Errorf("sandbox: reserve %d bytes for a linear memory: %w", n, err)
	}
	return &image{mem: mem, fd: -1, copyMax: copyMax, maxCopy: maxCopiedPages}, nil
}

func pageAlign(n uint64) uint64 {
	ps := uint64(unix.Getpagesize())
	return (n + ps - 1) &^ (ps - 1)
}

// Reallocate implements experimental.LinearMemory: growing within the
// reservation is only a longer slice of it; beyond it, nil (refused).
func (im *image) Reallocate(size uint64) []byte {
	if im.mem == nil || size > uint64(len(im.mem)) {
		return nil
	}
	im.size = size
	return im.mem[:size:size]
}

// Free implements experimental.LinearMemory.
func (im *image) Free() {
	if im.mem != nil {
		unix.Munmap(im.mem)
		im.mem = nil
	}
	if im.src != nil {
		unix.Munmap(im.src)
		im.src = nil
	}
	if im.fd >= 0 {
		unix.Close(im.fd)
		im.fd = -1
	}
}

// snapshot saves the memory's current contents as the state reset
// returns to.
func (im *image) snapshot() error {
	if im.mem == nil || im.fd >= 0 || im.saved != nil {
		return errors.New("sandbox: snapshot of a freed or already snapshotted memory")
	}
	if im.size <= im.copyMax {
		im.saved = append(make([]byte, 0, im.size), im.mem[:im.size]...)
		im.snapSize = im.size
		return nil
	}
	n := pageAlign(im.size)
	fd, err := unix.MemfdCreate("toolhost-memory-image", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return fmt.Errorf("sandbox: memfd for a memory image: %w", err)
	}
	if n > 0 {
		err = unix.Ftruncate(fd, int64(n))
		if err == nil {
			err = writeNonZero(fd, im.mem[:im.size])
		}
		if err == nil {
			// Nothing may change the image once mapped.
			_, err = unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_WRITE|unix.F_SEAL_SEAL)
		}
		if err == nil {
			err = mapFixed(im.mem[:n], fd)
		}
		if err != nil {
			unix.Close(fd)
			return fmt.Errorf("sandbox: memory image: %w", err)
		}
		if pagemapFd() >= 0 {
			// Without it reset discards pages; nothing else changes.
			im.src, _ = unix.Mmap(fd, 0, int(n), unix.PROT_READ, unix.MAP_SHARED)
		}
	}
	im.fd, im.snapSize = fd, im.size
	return nil
}

// reset returns the memory to its snapshot. It refuses (and changes
// nothing) when the memory is not the size it had then: wazero tracks the
// size too, and cannot shrink a memory.
func (im *image) reset() error {
	if im.fd < 0 && im.saved == nil {
		return errors.New("sandbox: reset of a memory without a snapshot")
	}
	if im.size != im.snapSize {
		return fmt.Errorf("sandbox: the memory grew from %d to %d bytes", im.snapSize, im.size)
	}
	if im.saved != nil {
		copy(im.mem[:im.size], im.saved)
		return nil
	}
	if n := pageAlign(im.size); n > 0 {
		if im.src != nil && im.copyBack(n) {
			return nil
		}
		return discard(im.mem[:n])
	}
	return nil
}

// copyBack restores the first n bytes by copying, from the snapshot, every
// page that is private to this mapping (a page some call wrote: the write
// copied it out of the memfd); the other pages still map the memfd, which
// holds the snapshot, or are not mapped yet. /proc/self/pagemap tells
// which is which. The copied pages stay mapped and writable, so the next
// call that writes them takes no page fault: discarding them instead costs
// a fault per page on its next write, 10-20 µs each in the CI microVM
// (RATIONALE.md, "Resetting a large memory copies the pages calls wrote").
// The private pages are the union of what every call since the last
// discard wrote; past maxCopiedPages it returns false and the caller
// discards them all. It returns false, changing nothing, when pagemap
// cannot be read.
func (im *image) copyBack(n uint64) bool {
	private, ok := im.privatePages(n)
	if !ok || uint64(len(private)) > im.maxCopy {
		return false
	}
	ps := uint64(unix.Getpagesize())
	for _, i := range private {
		copy(im.mem[i*ps:(i+1)*ps], im.src[i*ps:(i+1)*ps])
	}
	return true
}

// privatePages lists the first n bytes' pages that are private to the
// mapping, by index (false: pagemap unreadable). The list reuses a buffer
// of the image's.
func (im *image) privatePages(n uint64) ([]uint64, bool) {
	ps := uint64(unix.Getpagesize())
	pages := n / ps
	if uint64(cap(im.entries)) < pages*8 {
		im.entries = make([]byte, pages*8)
	}
	buf := im.entries[:pages*8]
	if !readPagemap(uintptr(unsafe.Pointer(unsafe.SliceData(im.mem)))/uintptr(ps)*8, buf) {
		return nil, false
	}
	private := im.private[:0]
	for i := range pages {
		if privatePage(binary.LittleEndian.Uint64(buf[i*8:])) {
			private = append(private, i)
		}
	}
	im.private = private
	return private, true
}

// privatePage reports whether a pagemap entry is a page of this mapping's
// own: present and not the file's (bit 63 present, 61 file or shared), or
// swapped out (62; only private pages are).
func privatePage(e uint64) bool {
	const present, swapped, file = 1 << 63, 1 << 62, 1 << 61
	return e&swapped != 0 || (e&present != 0 && e&file == 0)
}

var pagemap = struct {
	once sync.Once
	fd   int
}{fd: -1}

// pagemapFd is this process's /proc/self/pagemap, opened once; -1 when it
// cannot be opened.
func pagemapFd() int {
	pagemap.once.Do(func() {
		if fd, err := unix.Open("/proc/self/pagemap", unix.O_RDONLY|unix.O_CLOEXEC, 0); err == nil {
			pagemap.fd = fd
		}
	})
	return pagemap.fd
}

// readPagemap fills buf with the pagemap entries from byte offset off. A
// raw system call, like discard: it walks page tables and never blocks.
func readPagemap(off uintptr, buf []byte) bool {
	fd := pagemapFd()
	if fd < 0 {
		return false
	}
	for len(buf) > 0 {
		r, _, errno := unix.RawSyscall6(unix.SYS_PREAD64, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(buf))), uintptr(len(buf)), off, 0, 0)
		if errno == unix.EINTR {
			continue
		}
		if errno != 0 || r == 0 {
			return false
		}
		buf, off = buf[r:], off+r
	}
	return true
}

// discard drops b's private pages, so the next touch maps the image's page
// again. It is a raw system call: it takes microseconds and never blocks,
// and a plain one would let the runtime hand this thread's processor to
// another thread while it runs (a wakeup and two context switches per
// reset, measured at ~10% of a worker's time).
func discard(b []byte) error {
	_, _, errno := unix.RawSyscall(unix.SYS_MADVISE, uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)), unix.MADV_DONTNEED)
	if errno != 0 {
		return errno
	}
	return nil
}

// writeNonZero writes b's pages that are not all zero to fd at their
// offsets, leaving holes (which read as zeros) for the rest: the memfd's
// pages are the host's memory, counted in no process's resident size
// until mapped and touched, so a memory that declares 256 MiB and was
// written in a few pages must not hold 256 MiB of it per instance.
func writeNonZero(fd int, b []byte) error {
	ps := unix.Getpagesize()
	zero := make([]byte, ps)
	for start := 0; start < len(b); {
		end := min(start+ps, len(b))
		if bytes.Equal(b[start:end], zero[:end-start]) {
			start = end
			continue
		}
		// A run of pages with data, written in one go.
		for end < len(b) && !bytes.Equal(b[end:min(end+ps, len(b))], zero[:min(end+ps, len(b))-end]) {
			end = min(end+ps, len(b))
		}
		for off := start; off < end; {
			n, err := unix.Pwrite(fd, b[off:end], int64(off))
			if err != nil {
				return err
			}
			off += n
		}
		start = end
	}
	return nil
}

// mapFixed maps fd privately over b's pages, at b's address.
func mapFixed(b []byte, fd int) error {
	addr := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	r, _, errno := unix.Syscall6(unix.SYS_MMAP, addr, uintptr(len(b)), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_FIXED, uintptr(fd), 0)
	if errno != 0 {
		return errno
	}
	if r != addr {
		return fmt.Errorf("mmap placed the image at %#x, not %#x", r, addr)
	}
	return nil
}
