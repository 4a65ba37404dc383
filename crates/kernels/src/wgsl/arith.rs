//! Which [`Arithmetic`] an adapter runs, and each one's trunk kernel.

use super::error::WgslError;
use super::net::*;
use crate::arithmetic::Arithmetic;

impl Arithmetic {
    /// Whether `adapter` runs this arithmetic, and if not why not.
    pub fn check(self, adapter: &wgpu::Adapter) -> Result<(), WgslError> {
        let features = adapter.features();
        let missing = |what: &str| Err(WgslError::NotOnAdapter { arithmetic: self.name(), why: what.to_string() });
        if self != Arithmetic::F32 && !features.contains(wgpu::Features::SHADER_F16) {
            return missing("the adapter has no shader-f16");
        }
        if self == Arithmetic::Tensor {
            if !features.contains(wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX) {
                return missing("the adapter has no cooperative matrices");
            }
            let fits = adapter.cooperative_matrix_properties().iter().any(|c| {
                (c.m_size, c.n_size, c.k_size) == (16, 16, 16)
                    && c.ab_type == wgpu::CooperativeScalarType::F16
                    && c.cr_type == wgpu::CooperativeScalarType::F32
            });
            if !fits {
                return missing("the adapter has no 16x16x16 cooperative matrices of f16 with f32 sums");
            }
            let shared = adapter.limits().max_compute_workgroup_storage_size;
            if shared < COOP_WORKGROUP_BYTES {
                return missing(&format!(
                    "{shared} bytes of workgroup memory (the kernel needs {COOP_WORKGROUP_BYTES})"
                ));
            }
            let info = adapter.get_info();
            if (info.subgroup_min_size, info.subgroup_max_size) != (32, 32) {
                return missing(&format!(
                    "subgroups of {} to {} lanes (the kernel needs exactly 32)",
                    info.subgroup_min_size, info.subgroup_max_size
                ));
            }
        }
        Ok(())
    }

    /// The features a device needs for this arithmetic.
    pub(super) fn features(self) -> wgpu::Features {
        match self {
            Arithmetic::F32 => wgpu::Features::empty(),
            Arithmetic::F16Pairs => wgpu::Features::SHADER_F16,
            Arithmetic::Tensor => wgpu::Features::SHADER_F16 | wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX,
        }
    }

    /// The trunk kernel's source and the output rows of its workgroup.
    pub(super) fn trunk_kernel(self) -> (String, u32) {
        let shader = |operand: &str| {
            [operand, include_str!("gemm_vec4.wgsl"), include_str!("gemm_common.wgsl"), include_str!("gemm.wgsl")]
                .concat()
        };
        match self {
            Arithmetic::F32 => (shader(include_str!("operand_f32.wgsl")), TILE_M),
            Arithmetic::F16Pairs => (shader(include_str!("operand_f16.wgsl")), TILE_M),
            Arithmetic::Tensor => (
                [
                    include_str!("coop_enable.wgsl"),
                    include_str!("gemm_vec4.wgsl"),
                    include_str!("gemm_common.wgsl"),
                    include_str!("gemm_coop.wgsl"),
                ]
                .concat(),
                COOP_TILE_M,
            ),
        }
    }
}
