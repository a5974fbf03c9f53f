// Package simstore is lcl's store of articles, embedding vectors and models,
// similarity matrices with provenance, and run results, kept in a Badger
// database that callers never see.
//
// Records are typed (Article, Vectors, Matrix, Run, Model) and addressed by keys
// built from their identity ("sim/SET/KIND/DIGEST"). Every stored value has a
// versioned header and a CRC-32C checksum, so damage is reported as a
// *CorruptError naming the key. Writes are transactions (Store.Update with a
// Tx for several records); values larger than a chunk are split across keys
// and become visible atomically. One process at a time may open a store;
// another gets ErrLocked at once.
package simstore
