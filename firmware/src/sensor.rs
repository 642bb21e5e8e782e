//! A driver for an I²C temperature sensor, generic over [`embedded_hal::i2c::I2c`].
//!
//! The register map follows common digital thermometers (e.g. TI TMP117): register
//! `0x00` holds the temperature as a big-endian `i16` in units of 1/128 °C.

use embedded_hal::i2c::I2c;
use privq_core::Fixed;

/// Register holding the latest temperature.
pub const TEMPERATURE_REGISTER: u8 = 0x00;

/// Default 7-bit bus address.
pub const DEFAULT_ADDRESS: u8 = 0x48;

/// Converts a raw reading (1/128 °C units) to degrees Celsius, exactly:
/// 1/128 = 2⁻⁷, so the fixed-point value is `raw · 2³²⁻⁷`.
pub const fn raw_to_celsius(raw: i16) -> Fixed {
    Fixed::from_bits((raw as i64) << (Fixed::FRAC_BITS - 7))
}

/// A temperature sensor on an I²C bus.
#[derive(Debug)]
pub struct TempSensor<I2C> {
    bus: I2C,
    address: u8,
}

impl<I2C: I2c> TempSensor<I2C> {
    /// A sensor at `address` on `bus`.
    pub fn new(bus: I2C, address: u8) -> Self {
        TempSensor { bus, address }
    }

    /// Reads the raw register value (1/128 °C units).
    pub fn read_raw(&mut self) -> Result<i16, I2C::Error> {
        let mut buf = [0u8; 2];
        self.bus
            .write_read(self.address, &[TEMPERATURE_REGISTER], &mut buf)?;
        Ok(i16::from_be_bytes(buf))
    }

    /// Reads the temperature in °C.
    pub fn read_celsius(&mut self) -> Result<Fixed, I2C::Error> {
        self.read_raw().map(raw_to_celsius)
    }

    /// Gives the bus back.
    pub fn release(self) -> I2C {
        self.bus
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversion_is_exact() {
        assert_eq!(raw_to_celsius(128), Fixed::ONE);
        assert_eq!(raw_to_celsius(-64), Fixed::from_bits(-(1 << 31)));
        assert_eq!(raw_to_celsius(2752).to_f64(), 21.5);
    }
}
