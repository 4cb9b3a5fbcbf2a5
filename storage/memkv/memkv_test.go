package memkv_test

import (
	"testing"

	"github.com/tributary/tributary/storage"
	"github.com/tributary/tributary/storage/memkv"
	"github.com/tributary/tributary/storage/storagetest"
)

func TestConformance(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storage.KV { return memkv.New() })
}
