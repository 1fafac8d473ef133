//! The memory limiter that enforces [`crate::kernel::StepLimits::memory_bytes`].

use crate::kernel::limits::{
    MAX_INSTANCES, MAX_MEMORIES, MAX_TABLES, MAX_TABLE_ELEMENTS, TABLE_ELEMENT_BYTES,
};

/// Caps the total linear memory and table storage of one store and
/// remembers a breach, so the error can name the limit instead of a generic
/// trap.
pub(crate) struct MemoryLimiter {
    cap: usize,
    used: usize,
    pub(crate) breached: bool,
}

impl MemoryLimiter {
    pub(crate) fn new(cap: usize) -> Self {
        MemoryLimiter {
            cap,
            used: 0,
            breached: false,
        }
    }
}

/// The error a refused `memory.grow` traps with (found again by flag).
#[derive(Debug, thiserror::Error)]
#[error("memory limit of {0} bytes reached")]
pub(crate) struct MemoryLimitHit(pub usize);

impl wasmtime::ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let after = self.used + desired.saturating_sub(current);
        if after > self.cap {
            self.breached = true;
            return Err(wasmtime::Error::new(MemoryLimitHit(self.cap)));
        }
        self.used = after;
        Ok(true)
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > MAX_TABLE_ELEMENTS {
            return Ok(false);
        }
        let grown = desired.saturating_sub(current) * TABLE_ELEMENT_BYTES;
        let after = self.used.saturating_add(grown);
        if after > self.cap {
            self.breached = true;
            return Err(wasmtime::Error::new(MemoryLimitHit(self.cap)));
        }
        self.used = after;
        Ok(true)
    }

    fn instances(&self) -> usize {
        MAX_INSTANCES
    }

    fn tables(&self) -> usize {
        MAX_TABLES
    }

    fn memories(&self) -> usize {
        MAX_MEMORIES
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::limits::DEFAULT_MEMORY_BYTES;

    #[test]
    fn limiter_counts_all_memories() {
        use wasmtime::ResourceLimiter;
        let mut l = MemoryLimiter::new(100);
        assert!(l.memory_growing(0, 60, None).unwrap());
        assert!(l.memory_growing(0, 40, None).unwrap());
        assert!(l.memory_growing(40, 41, None).is_err());
        assert!(l.breached);
    }

    /// A core module: `tables` funcref tables of minimum size 0, the first
    /// exported as `t`.
    fn module_with_tables(tables: u8) -> Vec<u8> {
        let mut m = b"\0asm\x01\0\0\0".to_vec();
        let body_len = 1 + 3 * tables as usize;
        let mut section = vec![0x04];
        let mut n = body_len;
        loop {
            let byte = (n & 0x7f) as u8;
            n >>= 7;
            if n == 0 {
                section.push(byte);
                break;
            }
            section.push(byte | 0x80);
        }
        m.extend(section);
        m.push(tables);
        for _ in 0..tables {
            m.extend([0x70, 0x00, 0x00]);
        }
        m.extend([0x07, 0x05, 0x01, 0x01, b't', 0x01, 0x00]);
        m
    }

    fn store(engine: &wasmtime::Engine, cap: usize) -> wasmtime::Store<MemoryLimiter> {
        let mut store = wasmtime::Store::new(engine, MemoryLimiter::new(cap));
        store.limiter(|l| l);
        store
    }

    #[test]
    fn tables_count_against_the_memory_limit() {
        let cap = 4 << 20;
        let mut store = store(&wasmtime::Engine::default(), cap);
        let module = wasmtime::Module::new(store.engine(), module_with_tables(1)).unwrap();
        let instance = wasmtime::Instance::new(&mut store, &module, &[]).unwrap();
        let table = instance.get_table(&mut store, "t").unwrap();
        let fill = wasmtime::Ref::Func(None);
        let elements = (cap / TABLE_ELEMENT_BYTES) as u64;
        table.grow(&mut store, elements, fill.clone()).unwrap();
        assert!(!store.data().breached);
        let err = table.grow(&mut store, 1, fill).unwrap_err();
        assert!(store.data().breached, "{err:?}");
        assert!(err.downcast_ref::<MemoryLimitHit>().is_some(), "{err:?}");
    }

    #[test]
    fn tables_per_store_are_bounded() {
        let engine = wasmtime::Engine::default();
        let mut store = store(&engine, DEFAULT_MEMORY_BYTES);
        let ok = wasmtime::Module::new(&engine, module_with_tables(MAX_TABLES as u8)).unwrap();
        wasmtime::Instance::new(&mut store, &ok, &[]).unwrap();
        let mut store = self::store(&engine, DEFAULT_MEMORY_BYTES);
        let too_many =
            wasmtime::Module::new(&engine, module_with_tables(MAX_TABLES as u8 + 1)).unwrap();
        let err = wasmtime::Instance::new(&mut store, &too_many, &[]).unwrap_err();
        assert!(format!("{err:?}").contains("table"), "{err:?}");
    }
}
