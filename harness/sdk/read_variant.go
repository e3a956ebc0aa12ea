package sdk

import "strings"

// ReadVariantPrefix begins the Doc of a variant that changes only the read
// kernel: its store is the plugin's correct one. The harness runs store
// properties against the other variants and read properties against these,
// so a read mutant is never counted as a store mutant that survived. The
// prefix is the whole protocol: a plugin in another language marks its
// read variants the same way.
const ReadVariantPrefix = "read: "

// ReadVariant declares a variant of the read kernel.
func ReadVariant(name, doc string) Variant {
	return Variant{Name: name, Doc: ReadVariantPrefix + doc}
}

// IsReadVariant reports whether a variant's doc marks it as a read variant.
func IsReadVariant(doc string) bool { return strings.HasPrefix(doc, ReadVariantPrefix) }
