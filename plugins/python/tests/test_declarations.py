"""What a kernel declares reaches Describe and Attach as the protocol says:
recipes, slot width, fd arenas, bench rotation, variants' kinds; and a
declaration the SDK cannot serve is refused before the handshake."""

import unittest

import grpc

from helpers import Aborted, ShmArena, call, kv, pb, pool_desc, service

from kvharness_sdk import CUDA, SHM, Geometry, Kernel, Recipe, Variant, read_variant
from kvharness_sdk.kernel import check_declaration


class Declared(Kernel):
    name, version = "declared", "1.0.0"
    backends = (SHM, CUDA)
    slot_bits = 32
    variants = (Variant("plain", "declares nothing"), Variant("slow", "a control", correct=True),
                read_variant("bad-read", "a read mutant"))

    def geometry(self, variant, head_dim, page_size):
        r = None if variant == "plain" else Recipe(scale="ue8m0", eps=1e-8, quantize="reciprocal", saturate=True,
                                                   scale_ulps=2)
        return [Geometry("fp8-paged", head_dim + 4, (head_dim + 4) * page_size, r)]

    def store(self, call):
        pass

    def read(self, call):
        pass


class TestRecipe(unittest.TestCase):
    def test_names_and_types_are_checked(self):
        for kw, field in [({"scale": "fp32"}, "scale"), ({"quantize": "multiply"}, "quantize"),
                          ({"rounding": "toward-zero"}, "rounding"), ({"eps": "1e-8"}, "eps"),
                          ({"eps": float("nan")}, "eps"), ({"saturate": 1}, "saturate"), ({"scale_ulps": -1}, "scale_ulps"),
                          ({"scale_ulps": 1.5}, "scale_ulps"), ({"non_finite": "ignore"}, "non_finite")]:
            with self.assertRaisesRegex(ValueError, f"recipe {field}"):
                Recipe(**kw)

    def test_zero_eps_is_a_value(self):
        self.assertEqual(Recipe(eps=0).eps, 0)

    def test_non_finite_policy_is_sent(self):
        class Saturating(Declared):
            def geometry(self, variant, head_dim, page_size):
                return [Geometry("fp8-paged", 132, 132 * 64, Recipe(non_finite="saturate"))]

        r = call(service(Saturating()), "Describe", kv.DescribeRequest(head_dim=128, page_size=64)).layouts[0].recipe
        self.assertEqual(r.non_finite, kv.NON_FINITE_SATURATE)
        self.assertEqual(Recipe().non_finite, "")


class TestDescribe(unittest.TestCase):
    def test_declarations_are_sent(self):
        s = service(Declared())
        d = call(s, "Describe", kv.DescribeRequest(head_dim=128, page_size=64))
        self.assertEqual(list(d.kernels), ["store", "read"])
        self.assertEqual((d.slot_bits, d.cuda_fd_arenas, d.bench_rotation), (32, True, True))
        self.assertEqual(list(d.backends), [pb.BACKEND_SHM, pb.BACKEND_CUDA])
        g = d.layouts[0]
        self.assertEqual((g.layout, g.bytes_per_token, g.bytes_per_page), ("fp8-paged", 132, 132 * 64))
        r = g.recipe
        self.assertEqual((r.scale, r.quantize, r.rounding), (kv.SCALE_RULE_UE8M0, kv.QUANTIZE_RECIPROCAL,
                                                              kv.ROUNDING_NEAREST_EVEN))
        self.assertTrue(r.HasField("eps") and r.HasField("saturate") and r.HasField("scale_ulps"))
        self.assertEqual((r.eps, r.saturate, r.scale_ulps), (1e-8, True, 2))
        vs = {v.name: (v.correct, v.kernel) for v in d.variants}
        self.assertEqual(vs, {"plain": (False, ""), "slow": (True, ""), "bad-read": (False, "read")})

    def test_read_non_finite_policy_is_sent(self):
        d = call(service(Declared()), "Describe", kv.DescribeRequest(head_dim=128, page_size=64))
        self.assertEqual(d.read_non_finite, kv.NON_FINITE_UNDECLARED)

        class Contained(Declared):
            read_non_finite = "contained"

        d = call(service(Contained()), "Describe", kv.DescribeRequest(head_dim=128, page_size=64))
        self.assertEqual(d.read_non_finite, kv.NON_FINITE_CONTAINED)

    def test_no_recipe_leaves_the_field_unset(self):
        d = call(service(Declared()), "Describe", kv.DescribeRequest(variant="plain", head_dim=128, page_size=64))
        self.assertFalse(d.layouts[0].HasField("recipe"))

    def test_unset_recipe_fields_stay_unset(self):
        class OnlyEps(Declared):
            def geometry(self, variant, head_dim, page_size):
                return [Geometry("fp8-paged", 132, 132 * 64, Recipe(eps=0.0))]

        r = call(service(OnlyEps()), "Describe", kv.DescribeRequest(head_dim=128, page_size=64)).layouts[0].recipe
        self.assertTrue(r.HasField("eps"))
        self.assertEqual(r.eps, 0.0)
        self.assertFalse(r.HasField("saturate") or r.HasField("scale_ulps"))

    def test_shm_only_kernel_declares_no_fd_arenas(self):
        class Host(Declared):
            backends = (SHM,)

        self.assertFalse(call(service(Host()), "Describe", kv.DescribeRequest(head_dim=128, page_size=64)).cuda_fd_arenas)

    def test_attach_returns_the_recipe_per_pool(self):
        a = ShmArena(1 << 20)
        try:
            req = kv.AttachRequest(arena=a.desc, pools=[pool_desc("case", "fp8-paged", 128, 64, 128, 4096, 132 * 128)],
                                   staging=kv.Window(offset=65536, size=65536))
            g = call(service(Declared()), "Attach", req).geometry[0]
            self.assertEqual((g.layout, g.bytes_per_token, g.recipe.scale), ("fp8-paged", 132, kv.SCALE_RULE_UE8M0))
        finally:
            a.close()


class TestCheckDeclaration(unittest.TestCase):
    def test_refusals(self):
        for attrs, want in [({"slot_bits": 16}, "slot_bits 16"), ({"backends": ("gpu",)}, "backends"),
                            ({"variants": (Variant("a"), Variant("a"))}, "distinct"), ({"name": ""}, "set name"),
                            ({"read_non_finite": "propagate"}, "read_non_finite 'propagate'")]:
            k = type("K", (Declared,), attrs)()
            with self.assertRaisesRegex(ValueError, want):
                check_declaration(k)
        check_declaration(Declared())

    def test_variant_kernel_is_checked(self):
        with self.assertRaisesRegex(ValueError, "kernel 'nosuchkind'"):
            Variant("x", kernel="nosuchkind")

    def test_unknown_variant_is_invalid_argument(self):
        with self.assertRaises(Aborted) as e:
            call(service(Declared()), "Describe", kv.DescribeRequest(variant="nope"))
        self.assertEqual(e.exception.code, grpc.StatusCode.INVALID_ARGUMENT)


if __name__ == "__main__":
    unittest.main()


class HeadsAndPads(Kernel):
    """An engine-layout kernel: bytes per token by KV heads, pads kept."""

    name, version = "heads", "1.0.0"

    def geometry(self, variant, head_dim, page_size, heads=1):
        return [Geometry("vllm-flash", 4 * heads * head_dim, 4 * heads * head_dim * page_size),
                Geometry("dsv4-main", 584, 584 * page_size, pad_policy="keep")]

    def store(self, call):
        pass


class BadPads(HeadsAndPads):
    def geometry(self, variant, head_dim, page_size, heads=1):
        return [Geometry("dsv4-main", 584, 584 * page_size, pad_policy="kept")]


class TestHeadsAndPadPolicy(unittest.TestCase):
    def test_heads_reach_a_geometry_that_takes_them(self):
        d = call(service(HeadsAndPads()), "Describe", kv.DescribeRequest(head_dim=128, page_size=16, heads=8))
        self.assertEqual(d.layouts[0].bytes_per_token, 4 * 8 * 128)
        d = call(service(HeadsAndPads()), "Describe", kv.DescribeRequest(head_dim=128, page_size=16))
        self.assertEqual(d.layouts[0].bytes_per_token, 4 * 128)  # no heads: one

    def test_a_geometry_without_heads_still_serves(self):
        d = call(service(Declared()), "Describe", kv.DescribeRequest(variant="plain", head_dim=128, page_size=64, heads=4))
        self.assertEqual(d.layouts[0].bytes_per_token, 132)

    def test_pad_policy_is_declared(self):
        d = call(service(HeadsAndPads()), "Describe", kv.DescribeRequest(head_dim=512, page_size=64))
        self.assertEqual(d.layouts[0].pad_policy, kv.PAD_POLICY_LAYOUT)
        self.assertEqual(d.layouts[1].pad_policy, kv.PAD_POLICY_KEEP)

    def test_unknown_pad_policy_is_refused(self):
        with self.assertRaisesRegex(Exception, "pad_policy 'kept'"):
            call(service(BadPads()), "Describe", kv.DescribeRequest(head_dim=512, page_size=64))


class LayoutMutant(HeadsAndPads):
    variants = [Variant("kv-swapped", "K where V goes", layouts=("vllm-flash",)), Variant("plain", "anywhere")]


class TestVariantLayouts(unittest.TestCase):
    def test_a_variant_names_the_layouts_its_bug_lives_in(self):
        d = call(service(LayoutMutant()), "Describe", kv.DescribeRequest(head_dim=128, page_size=16))
        self.assertEqual(list(d.variants[0].layouts), ["vllm-flash"])
        self.assertEqual(list(d.variants[1].layouts), [])
