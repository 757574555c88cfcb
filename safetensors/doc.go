// Package safetensors reads and writes the safetensors tensor format that Hugging Face checkpoints
// use: an 8-byte little-endian header length, a JSON header that gives each tensor's dtype, shape
// and byte range (plus optional string metadata under "__metadata__"), then the raw little-endian
// tensor data.
//
// Reading memory-maps the file, so opening a multi-gigabyte checkpoint costs nothing until a
// tensor is touched; Float32 converts BF16 and F16 to float32 exactly. A sharded checkpoint
// (model.safetensors.index.json with its weight_map) opens as one Set. Write produces files that
// Hugging Face's safetensors library reads, with the header padded to 8 bytes as it does, and
// publishes them atomically.
//
// Every problem with an input file is a user error (package usererr) whose one-line message
// names the file and the tensor or field at fault.
package safetensors
