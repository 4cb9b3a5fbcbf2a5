package badger

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"unsafe"

	"github.com/tributary/tributary/storage"
)

// redoName is the commit log's file in the data directory.
const redoName = "COMMITLOG"

// The commit log's layout: a header block, then records appended one after another.
const (
	redoHeaderSize = 4096
	redoRecHeader  = 4 + 4 + 8 // payload length, CRC-32C of generation|payload, generation
	// redoGrowStep is how much zeroed space the file gains at a time; redoMaxSize is where it
	// starts over (a checkpoint) instead of growing.
	redoGrowStep = 1 << 20
	redoMaxSize  = 16 << 20
	// redoNoSyncMaxSize is the size with NoSync, where the log holds the commit windows
	// (deferred.go) in two halves of redoNoSyncHalf: a generation fills one, then the next
	// the other (switchHalf), without waiting for its windows' writes into Badger.
	redoNoSyncMaxSize = 4 * maxWindowBytes
	redoNoSyncHalf    = redoNoSyncMaxSize / 2
)

// redoMagic starts a header: magic | generation | start | previous start | CRC-32C of what
// precedes it. redoMagicV1's header (magic | generation | CRC-32C), of a log written before the
// halves, starts its generation's records at redoHeaderSize with no previous one.
var (
	redoMagic   = [8]byte{'T', 'R', 'B', 'R', 'E', 'D', 'O', '2'}
	redoMagicV1 = [8]byte{'T', 'R', 'B', 'R', 'E', 'D', 'O', '1'}
)

// redoLog makes a commit durable with one write and one fdatasync of a file of its own,
// instead of syncing Badger's write-ahead file (issue 14). Badger writes that file through a
// shared memory mapping, and an fdatasync after writes through a mapping costs about 100 µs
// more on this kind of disk than one after pwrite (docs/benchmarks.md, "Durable commits").
// Each record holds one epoch's whole batch; the log is written before (and while) the batch
// goes into Badger, whose own files are then synced only at checkpoints: when the log is full
// (redoMaxSize) it syncs Badger's write-ahead files (walSync), after which every record is
// redundant, bumps the generation in the header and starts again at the first record.
//
// With NoSync (nothing synced: a killed process loses nothing that was written) the log
// holds two generations, one a half of the file each (redoNoSyncHalf). When the current
// half is full, the next generation starts in the other half (switchHalf) once the records
// there, two generations old, are all in Badger, which they are long since in the usual
// case: the previous generation's records stay, and Commit does not wait for the windows
// holding them (a checkpoint that wrote the filling window into Badger first stalled
// commits 24-75 ms every few seconds of a busy stream).
//
// At Open, records of the current generation (and of the previous one, with NoSync) above
// Badger's committed epoch are written into Badger again (replay): they are the commits an
// operating-system crash (NoSync: a killed process) took from Badger's unsynced files.
// Records are recognised by their generation and checksum; space past the last one is zeros
// or an older generation's records. A torn last record (a crash during its write, never
// acknowledged) ends the log; a damaged record followed by a readable one is damage, refused
// like a damaged write-ahead file.
//
// The file grows by redoGrowStep of written zeros at a time, synced once: writing into
// allocated space then needs no metadata update at each commit's sync.
//
// Where the filesystem allows it, records are written through a second descriptor opened
// with O_DIRECT|O_DSYNC (direct): one write of whole blocks that is on the disk when it
// returns, instead of a write into the page cache and an fdatasync that flushes it (about
// a third cheaper on this kind of disk, as pg_test_fsync's open_datasync shows). The bytes
// of the last block before off are kept (tail) to write that block again with the next
// record.
type redoLog struct {
	f    *os.File
	path string
	gen  uint64
	// start is where the generation's records begin; prevStart where the previous
	// generation's do (0: no previous one to replay), and prevLast is the epoch of its
	// last record. last is the epoch of the current generation's last record.
	start, prevStart int64
	prevLast, last   uint64
	off              int64 // where the next record goes
	size             int64 // the file's allocated (zeroed) size
	buf              []byte
	direct           *os.File // nil: appends are written and fdatasynced through f
	noSync           bool     // nothing is synced (Options.NoSync): records survive a killed process only
	tail             []byte   // the bytes from off's block start to off (direct writes)
	block            []byte   // an aligned buffer for direct writes
}

// redoBlock is the unit of a direct write: offsets and lengths are multiples of it, and
// so is the buffer's address.
const redoBlock = 4096

// openRedo opens (or creates) the commit log in dir and returns the records of its current
// generation in order.
// existing says the directory held a database before this Open: a missing log is then
// worth a warning (commits not yet in Badger's files, if any, are gone with it).
func openRedo(dir string, existing, acceptTail, noSync bool, warn func(msg string, args ...any)) (*redoLog, []redoRecord, error) {
	path := filepath.Join(dir, redoName)
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) && existing {
		warn("the commit log is missing and is created anew: commits an operating-system crash took from "+
			"the other files, if any, cannot be recovered (expected once after an upgrade)", "file", path)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("open commit log: %w", err)
	}
	r := &redoLog{f: f, path: path, noSync: noSync}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("stat commit log: %w", err)
	}
	if st.Size() < redoHeaderSize {
		// New (or created by a crash before its header was synced: nothing was logged in it).
		// Its first zeroed step is written now and synced with the header, so the first
		// commit does not pay for it.
		if _, err := f.WriteAt(make([]byte, redoGrowStep), 0); err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("grow commit log: %w", err)
		}
		r.size = redoGrowStep
		if err := r.reset(1); err != nil {
			f.Close()
			return nil, nil, err
		}
		if err := r.syncDir(dir); err != nil {
			f.Close()
			return nil, nil, err
		}
		r.direct = r.openDirect()
		return r, nil, nil
	}
	r.size = st.Size()
	hdr := make([]byte, redoHeaderSize)
	if _, err := f.ReadAt(hdr, 0); err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("read commit log header: %w", err)
	}
	h, ok := parseRedoHeader(hdr)
	if !ok || h.gen < 1 || h.start < redoHeaderSize || h.prevStart != 0 && (h.prevStart < redoHeaderSize || h.gen < 2) {
		f.Close()
		return nil, nil, damaged(path, "the header is damaged; restore the data directory from a backup")
	}
	r.gen, r.start, r.prevStart = h.gen, h.start, h.prevStart
	data := make([]byte, r.size)
	if _, err := r.f.ReadAt(data, 0); err != nil && !errors.Is(err, io.EOF) {
		f.Close()
		return nil, nil, fmt.Errorf("read commit log: %w", err)
	}
	var recs []redoRecord
	if r.prevStart != 0 {
		prev, _, err := r.scan(data, r.gen-1, r.prevStart, acceptTail, warn)
		if err != nil {
			f.Close()
			return nil, nil, err
		}
		if len(prev) > 0 {
			r.prevLast = prev[len(prev)-1].epoch
		}
		recs = prev
	}
	cur, end, err := r.scan(data, r.gen, r.start, acceptTail, warn)
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if len(cur) > 0 {
		r.last = cur[len(cur)-1].epoch
	}
	recs = append(recs, cur...)
	r.off = end
	if r.direct = r.openDirect(); r.direct != nil {
		start := end &^ (redoBlock - 1)
		r.tail = make([]byte, end-start)
		if _, err := f.ReadAt(r.tail, start); err != nil {
			r.close()
			return nil, nil, fmt.Errorf("read commit log: %w", err)
		}
	}
	return r, recs, nil
}

// redoRecord is one logged commit.
type redoRecord struct {
	epoch, discard uint64
	batch          *storage.Batch
}

// redoHeader is what a header says.
type redoHeader struct {
	gen              uint64
	start, prevStart int64
}

func parseRedoHeader(b []byte) (redoHeader, bool) {
	switch [8]byte(b[:8]) {
	case redoMagicV1:
		h := redoHeader{gen: binary.LittleEndian.Uint64(b[8:16]), start: redoHeaderSize}
		return h, crc32.Checksum(b[:16], castagnoli) == binary.LittleEndian.Uint32(b[16:20])
	case redoMagic:
		h := redoHeader{gen: binary.LittleEndian.Uint64(b[8:16]), start: int64(binary.LittleEndian.Uint64(b[16:24])),
			prevStart: int64(binary.LittleEndian.Uint64(b[24:32]))}
		return h, crc32.Checksum(b[:32], castagnoli) == binary.LittleEndian.Uint32(b[32:36])
	}
	return redoHeader{}, false
}

// reset makes an empty log of generation gen: the header written and synced, records from
// the first block on, none of an earlier generation kept. The file keeps its size (older
// records behind the header are of an older generation).
func (r *redoLog) reset(gen uint64) error {
	if err := r.writeHeader(redoHeader{gen: gen, start: redoHeaderSize}); err != nil {
		return err
	}
	r.prevStart, r.prevLast, r.last = 0, 0, 0
	return nil
}

// switchHalf starts generation gen+1 in the other half of the log (NoSync), keeping the
// current generation's records for a replay. The caller made sure that the previous
// generation's records, which the new one overwrites, are in Badger (prevLast).
func (r *redoLog) switchHalf() error {
	other := int64(redoHeaderSize)
	if r.start == redoHeaderSize {
		other += redoNoSyncHalf
	}
	start, last := r.start, r.last
	if err := r.writeHeader(redoHeader{gen: r.gen + 1, start: other, prevStart: start}); err != nil {
		return err
	}
	r.prevStart, r.prevLast, r.last = start, last, 0
	return nil
}

// writeHeader writes (and syncs) the header of a new generation, whose records then start at
// h.start.
func (r *redoLog) writeHeader(h redoHeader) error {
	hdr := make([]byte, redoHeaderSize)
	copy(hdr, redoMagic[:])
	binary.LittleEndian.PutUint64(hdr[8:16], h.gen)
	binary.LittleEndian.PutUint64(hdr[16:24], uint64(h.start))
	binary.LittleEndian.PutUint64(hdr[24:32], uint64(h.prevStart))
	binary.LittleEndian.PutUint32(hdr[32:36], crc32.Checksum(hdr[:32], castagnoli))
	if _, err := r.f.WriteAt(hdr, 0); err != nil {
		return fmt.Errorf("write commit log header: %w", err)
	}
	if r.size < redoHeaderSize {
		r.size = redoHeaderSize
	}
	if err := r.sync(); err != nil {
		return fmt.Errorf("sync commit log header: %w", err)
	}
	r.gen, r.start, r.off = h.gen, h.start, h.start
	r.tail = r.tail[:0]
	return nil
}

// scan reads the records of generation gen from start on in data (the file) and returns them
// with the offset after the last.
func (r *redoLog) scan(data []byte, gen uint64, start int64, acceptTail bool, warn func(msg string, args ...any)) ([]redoRecord, int64, error) {
	var recs []redoRecord
	off := start
	for {
		rec, n, ok := recordAt(data, off, gen)
		if !ok {
			break
		}
		recs = append(recs, rec)
		off += n
	}
	// Past the end: zeros, an older generation, or a torn last record. A readable record of
	// this generation further on means damaged bytes in the middle.
	var g [8]byte
	binary.LittleEndian.PutUint64(g[:], gen)
	for next := off + 1; next+redoRecHeader <= int64(len(data)); next++ {
		if [8]byte(data[next+8:next+16]) != g {
			continue
		}
		if _, _, ok := recordAt(data, next, gen); ok {
			if !acceptTail {
				return nil, 0, damaged(r.path, "damaged bytes at offset %d are followed by readable commits; "+
					"start with --accept-damaged-tail to drop them (the commits after the damage are lost)", off)
			}
			warn("dropping the commit log after damaged bytes (--accept-damaged-tail)", "file", r.path, "offset", off)
			break
		}
	}
	return recs, off, nil
}

// recordAt reads the record at off of data, if one of generation want is there.
func recordAt(data []byte, off int64, want uint64) (redoRecord, int64, bool) {
	if off+redoRecHeader > int64(len(data)) {
		return redoRecord{}, 0, false
	}
	hdr := data[off : off+redoRecHeader]
	n := int64(binary.LittleEndian.Uint32(hdr[0:4]))
	sum := binary.LittleEndian.Uint32(hdr[4:8])
	gen := binary.LittleEndian.Uint64(hdr[8:16])
	if gen != want || n < 16 || off+redoRecHeader+n > int64(len(data)) {
		return redoRecord{}, 0, false
	}
	payload := data[off+redoRecHeader : off+redoRecHeader+n]
	if crc32.Update(crc32.Checksum(hdr[8:16], castagnoli), castagnoli, payload) != sum {
		return redoRecord{}, 0, false
	}
	rec, ok := decodeRedo(payload)
	return rec, redoRecHeader + n, ok
}

// encode lays out one record for epoch in r.buf.
func (r *redoLog) encode(epoch, discard uint64, b *storage.Batch) []byte {
	// Sized once: a big epoch's record would otherwise be copied a few times
	// over while it grows (an entry adds a flag and two varints).
	buf := slices.Grow(r.buf[:0], redoRecHeader+16+b.Size()+b.Len()*(1+2*binary.MaxVarintLen32))
	buf = append(buf, make([]byte, redoRecHeader)...)
	buf = binary.LittleEndian.AppendUint64(buf, epoch)
	buf = binary.LittleEndian.AppendUint64(buf, discard)
	for i := 0; i < b.Len(); i++ {
		k, v, del := b.Entry(i)
		if del {
			buf = append(buf, 1)
		} else {
			buf = append(buf, 0)
		}
		buf = binary.AppendUvarint(buf, uint64(len(k)))
		buf = append(buf, k...)
		if !del {
			buf = binary.AppendUvarint(buf, uint64(len(v)))
			buf = append(buf, v...)
		}
	}
	n := len(buf) - redoRecHeader
	binary.LittleEndian.PutUint32(buf[0:4], uint32(n))
	binary.LittleEndian.PutUint64(buf[8:16], r.gen)
	binary.LittleEndian.PutUint32(buf[4:8], crc32.Update(crc32.Checksum(buf[8:16], castagnoli), castagnoli, buf[redoRecHeader:]))
	r.buf = nil
	if cap(buf) <= redoKeepBuffer {
		r.buf = buf // reused by the next record; a big epoch's buffer is not kept
	}
	return buf
}

// redoKeepBuffer is the largest encode or write buffer the log keeps for reuse between records:
// room for the biggest record (a batch under redoBigBatch), so that a bulk writer's epochs (a
// CDC copy's are 1-2 MB) reuse the two buffers instead of taking fresh ones each commit.
const redoKeepBuffer = redoBigBatch + redoBigBatch/4

func decodeRedo(p []byte) (redoRecord, bool) {
	rec := redoRecord{epoch: binary.LittleEndian.Uint64(p[0:8]), discard: binary.LittleEndian.Uint64(p[8:16]), batch: &storage.Batch{}}
	p = p[16:]
	for len(p) > 0 {
		del := p[0] == 1
		p = p[1:]
		kl, n := binary.Uvarint(p)
		if n <= 0 || uint64(len(p)-n) < kl {
			return redoRecord{}, false
		}
		k := p[n : n+int(kl)]
		p = p[n+int(kl):]
		if del {
			rec.batch.Delete(k)
			continue
		}
		vl, n := binary.Uvarint(p)
		if n <= 0 || uint64(len(p)-n) < vl {
			return redoRecord{}, false
		}
		rec.batch.Put(k, p[n:n+int(vl)])
		p = p[n+int(vl):]
	}
	return rec, true
}

// fits reports whether a record of n bytes fits in the generation's room (maxSize).
func (r *redoLog) fits(n int) bool { return r.off+int64(n) <= r.start+r.maxSize() }

// maxSize is the room of a generation's records, after which the log starts over.
func (r *redoLog) maxSize() int64 {
	if r.noSync {
		return redoNoSyncHalf
	}
	return redoMaxSize - redoHeaderSize
}

// append writes rec (from encode) at the end and syncs it. The caller checked fits.
func (r *redoLog) append(rec []byte) error {
	end := r.off + int64(len(rec))
	grew := false
	if end > r.size {
		grew = true
		// Grow by zeroed steps, synced with the record below (the size changes once per step).
		grow := max(redoGrowStep, end-r.size)
		if _, err := r.f.WriteAt(make([]byte, grow), r.size); err != nil {
			return fmt.Errorf("grow commit log: %w", err)
		}
		r.size += grow
	}
	if r.direct != nil {
		if err := r.appendDirect(rec, end, grew); err == nil {
			return nil
		} else if !errors.Is(err, syscall.EINVAL) {
			return err
		}
		// The filesystem takes no direct writes after all: write through f from now on.
		r.direct.Close()
		r.direct = nil
	}
	if _, err := r.f.WriteAt(rec, r.off); err != nil {
		return fmt.Errorf("write commit log: %w", err)
	}
	if err := r.sync(); err != nil {
		return fmt.Errorf("sync commit log: %w", err)
	}
	r.off = end
	r.last = recordEpoch(rec)
	return nil
}

// recordEpoch is the epoch of a record from encode.
func recordEpoch(rec []byte) uint64 { return binary.LittleEndian.Uint64(rec[redoRecHeader:]) }

// appendDirect writes rec at off through the direct descriptor: the blocks from off's
// block to the end of rec's, the first one starting with the kept tail, the last one
// ending in zeros (as the file's unwritten space does). Zeros the log grew by just now
// (grew) are synced first, so the blocks written are allocated on the disk already.
func (r *redoLog) appendDirect(rec []byte, end int64, grew bool) error {
	if grew {
		if err := fdatasync(r.f); err != nil {
			return fmt.Errorf("sync commit log: %w", err)
		}
	}
	start := r.off &^ (redoBlock - 1)
	head := int(r.off - start)
	n := (head + len(rec) + redoBlock - 1) &^ (redoBlock - 1)
	buf := r.alignedBuffer(n)
	copy(buf, r.tail[:head])
	copy(buf[head:], rec)
	clear(buf[head+len(rec):])
	if _, err := r.direct.WriteAt(buf, start); err != nil {
		return fmt.Errorf("write commit log: %w", err)
	}
	if cap(r.block) > redoKeepBuffer {
		defer func() { r.block = nil }() // after the tail is copied out of it below
	}
	last := end &^ (redoBlock - 1)
	r.tail = append(r.tail[:0], buf[last-start:end-start]...)
	r.off = end
	r.last = recordEpoch(rec)
	return nil
}

// alignedBuffer returns n bytes (a multiple of redoBlock) at a redoBlock-aligned address,
// reusing r.block.
func (r *redoLog) alignedBuffer(n int) []byte {
	if cap(r.block) < n {
		raw := make([]byte, n+redoBlock)
		shift := 0
		if rem := int(uintptr(unsafe.Pointer(&raw[0])) & (redoBlock - 1)); rem != 0 {
			shift = redoBlock - rem
		}
		r.block = raw[shift : shift+n]
	}
	return r.block[:n]
}

// sync makes the log's writes durable, unless it syncs nothing.
func (r *redoLog) sync() error {
	if r.noSync {
		return nil
	}
	return fdatasync(r.f)
}

// openDirect opens the log for direct writes (nil: none, and always when it
// syncs nothing: a direct write is on the disk when it returns).
func (r *redoLog) openDirect() *os.File {
	if r.noSync {
		return nil
	}
	return openDirect(r.path)
}

func (r *redoLog) syncDir(dir string) error {
	if r.noSync {
		return nil
	}
	return syncDir(dir)
}

func (r *redoLog) close() error {
	if r.direct != nil {
		r.direct.Close()
	}
	return r.f.Close()
}
