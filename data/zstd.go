package data

import (
	"sync"

	"github.com/apache/arrow/go/v17/parquet/compress"
	"github.com/klauspost/compress/zstd"
)

// Arrow v17's zstd codec builds a new encoder for every Parquet page it compresses at an explicit
// level, which the page writer always asks for; each encoder allocates its history buffers anew.
// On a 1M-row import that was most of the allocation and a good part of the CPU time. This codec
// keeps one encoder per level (a zstd.Encoder is safe for concurrent EncodeAll) and otherwise
// behaves like Arrow's. Arrow's registry is meant to be set from init; this is the only change
// gorstar makes to it, and it alters no file format.
func init() {
	if orig, err := compress.GetCodec(compress.Codecs.Zstd); err == nil {
		compress.RegisterCodec(compress.Codecs.Zstd, &reusedZstd{Codec: orig})
	}
}

type reusedZstd struct {
	compress.Codec
	encoders sync.Map // level → *zstd.Encoder
}

func (z *reusedZstd) EncodeLevel(dst, src []byte, level int) []byte {
	return z.encoder(level).EncodeAll(src, dst[:0])
}

func (z *reusedZstd) Encode(dst, src []byte) []byte {
	return z.EncodeLevel(dst, src, compress.DefaultCompressionLevel)
}

func (z *reusedZstd) encoder(level int) *zstd.Encoder {
	if enc, ok := z.encoders.Load(level); ok {
		return enc.(*zstd.Encoder)
	}
	speed := zstd.SpeedDefault
	if level != compress.DefaultCompressionLevel {
		speed = zstd.EncoderLevelFromZstd(level)
	}
	enc, err := zstd.NewWriter(nil, zstd.WithZeroFrames(true), zstd.WithEncoderLevel(speed), zstd.WithWindowSize(1<<20))
	if err != nil { // only for invalid options, which these are not
		panic(err)
	}
	actual, _ := z.encoders.LoadOrStore(level, enc)
	return actual.(*zstd.Encoder)
}
