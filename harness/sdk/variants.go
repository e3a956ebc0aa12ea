package sdk

// KernelVariants marks every variant of vs as changing kernel (it sets
// Variant.Kernel) and returns vs: a plugin whose variants all change one
// kernel kind (load, pdasync) names it once, not on every variant.
func KernelVariants(kernel string, vs []Variant) []Variant {
	for i := range vs {
		vs[i].Kernel = kernel
	}
	return vs
}
