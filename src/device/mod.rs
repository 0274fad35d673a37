//! Stub: replaced by the real device runtime.
#[derive(Debug, Clone)]
pub struct DeviceError(pub String);
impl std::fmt::Display for DeviceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result { f.write_str(&self.0) }
}
pub struct Gpu;
pub fn gpu() -> Result<&'static Gpu, DeviceError> { Err(DeviceError("not built".into())) }
