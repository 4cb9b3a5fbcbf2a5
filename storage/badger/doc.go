// Package badger implements storage.KV on Badger v4 in managed mode: a version is the epoch that wrote
// it. It is the only package importing Badger.
//
// Store adds what Badger lacks for atomic epochs: a committed-epoch watermark persisted under a reserved
// key, written after each epoch's writes, and a roll-back at Open of versions above it (a big batch is
// split into several Badger transactions, which a crash may leave half applied). Options configure it.
package badger
