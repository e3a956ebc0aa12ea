package sdk

// ReadVariant declares a variant that changes only the read kernel: its
// store is the plugin's correct one. The harness runs read properties
// against it (Variant.Kernel, sent in Describe), so a read mutant is never
// counted as a store mutant that survived.
func ReadVariant(name, doc string) Variant {
	return Variant{Name: name, Doc: doc, Kernel: "read"}
}

// IsReadVariant reports whether a variant changes the read kernel.
func IsReadVariant(v Variant) bool { return v.Kernel == "read" }

// KernelVariants marks every variant of vs as changing kernel (it sets
// Variant.Kernel) and returns vs: a plugin whose variants all change one
// kernel kind (load, pdasync) names it once, not on every variant.
func KernelVariants(kernel string, vs []Variant) []Variant {
	for i := range vs {
		vs[i].Kernel = kernel
	}
	return vs
}
