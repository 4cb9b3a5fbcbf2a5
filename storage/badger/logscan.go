package badger

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"strconv"
)

// Badger's write-ahead files (*.mem, one per memtable, and *.vlog) share one format: a 20-byte
// header, then entries, each a header (meta, user meta, uvarint key length, value length and
// expiry), the key (ending in an 8-byte version), the value and a big-endian CRC-32C of all that.
// The entries of a transaction carry bitTxn and end with an entry carrying bitFinTxn whose value is
// the commit version in decimal. Replay keeps everything up to the last complete transaction and
// truncates the rest (badger/v4 memtable.go, logFile.iterate); this file mirrors that reading.
const (
	logHeaderSize = 20
	bitTxn        = 1 << 6
	bitFinTxn     = 1 << 7
	maxKeyLen     = 1 << 16
	// knownMeta are the meta bits Badger writes (delete, value pointer, discard earlier
	// versions, merge, txn, fin txn).
	knownMeta = 1 | 2 | 4 | 8 | bitTxn | bitFinTxn
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// logScan is what scanLogFile found in one write-ahead file.
type logScan struct {
	size     int64 // file size
	validEnd int64 // end of the last complete write: Badger keeps [0, validEnd)
	stop     int64 // where sequential reading stopped (>= validEnd)
	dataEnd  int64 // end of the last non-zero byte (>= stop, or validEnd when all after it is zero)
	// damaged reports a readable entry after stop: bytes were damaged in the middle of the file,
	// not left half-written at its end by a crash.
	damaged bool
}

// clean reports that nothing follows the last complete write.
func (r logScan) clean() bool { return r.dataEnd <= r.validEnd }

// logEntry decodes the entry at off, n bytes long. ok is false when no valid entry starts there
// (n is then the bytes checksummed in vain, if any).
func logEntry(data []byte, off int64) (n int64, meta byte, key, value []byte, ok bool) {
	if off+2 > int64(len(data)) {
		return 0, 0, nil, nil, false
	}
	p := data[off:]
	meta = p[0]
	i := 2
	klen, c := binary.Uvarint(p[i:])
	if c <= 0 {
		return 0, 0, nil, nil, false
	}
	i += c
	vlen, c := binary.Uvarint(p[i:])
	if c <= 0 {
		return 0, 0, nil, nil, false
	}
	i += c
	if _, c = binary.Uvarint(p[i:]); c <= 0 {
		return 0, 0, nil, nil, false
	}
	i += c
	if klen < 8 || klen > maxKeyLen || vlen > uint64(len(p)) {
		return 0, 0, nil, nil, false
	}
	end := uint64(i) + klen + vlen
	if end+4 > uint64(len(p)) {
		return 0, 0, nil, nil, false
	}
	if crc32.Checksum(p[:end], castagnoli) != binary.BigEndian.Uint32(p[end:end+4]) {
		return int64(end + 4), 0, nil, nil, false // n: the bytes checksummed
	}
	key = p[uint64(i) : uint64(i)+klen]
	return int64(end + 4), meta, key, p[uint64(i)+klen : end], true
}

// version returns the version Badger appends to a key (bitwise inverted, big endian).
func version(key []byte) uint64 {
	return ^binary.BigEndian.Uint64(key[len(key)-8:])
}

// scanLogFile reads a write-ahead file the way Badger's replay does and reports where the kept
// part ends and whether anything readable follows a damaged spot.
func scanLogFile(path string) (logScan, error) {
	f, err := os.Open(path)
	if err != nil {
		return logScan{}, damaged(path, "cannot open: %v", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return logScan{}, damaged(path, "cannot stat: %v", err)
	}
	r := logScan{size: info.Size()}
	if r.size <= logHeaderSize {
		r.validEnd, r.stop, r.dataEnd = r.size, r.size, r.size
		return r, nil
	}
	// The files are preallocated (sparse, up to 2 GiB for a value log): map only up to the end
	// of their data.
	end := dataExtentEnd(f, r.size)
	if end <= logHeaderSize {
		r.validEnd, r.stop, r.dataEnd = logHeaderSize, logHeaderSize, logHeaderSize
		return r, nil
	}
	data, unmap, err := mapFile(f, end)
	if err != nil {
		return logScan{}, fmt.Errorf("map %s: %w", path, err)
	}
	defer unmap()
	// The header is a data key id (0: this store is never encrypted) and a random IV.
	if id := binary.BigEndian.Uint64(data[:8]); id != 0 {
		return logScan{}, damaged(path, "header damaged (data key id %d; the store is not encrypted); "+
			"restore the data directory from a backup", id)
	}

	off := int64(logHeaderSize)
	r.validEnd = off
	var pending uint64 // version of the transaction being read (0: none)
	for {
		n, meta, key, value, ok := logEntry(data, off)
		if !ok {
			break
		}
		v := version(key)
		switch {
		case meta&bitTxn != 0:
			if pending == 0 {
				pending = v
			}
			if pending != v {
				ok = false
			}
		case meta&bitFinTxn != 0:
			fin, err := strconv.ParseUint(string(value), 10, 64)
			if err != nil || fin != pending {
				ok = false
			}
			pending = 0
		default:
			ok = pending == 0
		}
		if !ok {
			break
		}
		off += n
		if pending == 0 {
			r.validEnd = off
		}
	}
	r.stop = off
	r.dataEnd = int64(len(bytes.TrimRight(data, "\x00")))
	if r.dataEnd < r.validEnd {
		r.dataEnd = r.validEnd
	}
	// A crash leaves at most one write half done, and nothing after it (the file beyond was
	// zeros). An entry that reads after the stop means damaged bytes in front of good ones,
	// unless it belongs to the unfinished transaction itself (a machine crash may persist its
	// pages out of order).
	budget := int64(1 << 30) // bytes checksummed while looking; past it, call the file damaged
	for o := r.stop + 1; o < r.dataEnd; o++ {
		if data[o]&^knownMeta != 0 {
			continue
		}
		n, meta, key, _, ok := logEntry(data, o)
		if budget -= n; budget < 0 {
			r.damaged = true
			break
		}
		if !ok {
			continue
		}
		if pending != 0 && meta&bitTxn != 0 && version(key) == pending {
			continue
		}
		r.damaged = true
		break
	}
	return r, nil
}
