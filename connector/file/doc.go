// Package file is the sink connector that writes JSON lines into files in a
// directory (connector = 'file'), one file per writer and epoch, replaced
// atomically, so a replayed epoch rewrites the same file.
package file
