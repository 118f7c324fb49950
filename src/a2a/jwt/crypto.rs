//! `jsonwebtoken`'s cryptography on ring, the provider rustls already uses here (docs/A2A.md,
//! "Tokens": its two built-in providers bring aws-lc-rs, a second crypto library compiled from
//! C, or seven RustCrypto crates). Verification only, and only the asymmetric algorithms:
//! the bridge signs nothing, and a JWK set publishes public keys.

use jsonwebtoken::crypto::{CryptoProvider, JwtSigner, JwtVerifier, KeyUtils};
use jsonwebtoken::errors::{ErrorKind, Result};
use jsonwebtoken::jwk::ThumbprintHash;
use jsonwebtoken::signature::{Error as SignatureError, Verifier};
use jsonwebtoken::{Algorithm, DecodingKey, DecodingKeyKind, EncodingKey};
use ring::signature as sig;

/// The provider, installed once per process by [`install`].
static RING: CryptoProvider = CryptoProvider {
    signer_factory: no_signer,
    verifier_factory: verifier,
    key_utils: KeyUtils {
        rsa_pub_components_from_private_key: |_| Err(ErrorKind::InvalidKeyFormat.into()),
        rsa_pub_components_from_public_key: |_| Err(ErrorKind::InvalidKeyFormat.into()),
        ec_pub_components_from_private_key: |_, _| Err(ErrorKind::InvalidKeyFormat.into()),
        ed_pub_components_from_private_key: |_, _| Err(ErrorKind::InvalidKeyFormat.into()),
        compute_digest: digest,
    },
};

/// Makes ring `jsonwebtoken`'s provider (a second call finds it installed).
pub fn install() {
    let _ = RING.install_default();
}

/// What checks a signature of `algorithm`: the RSA ones take a key as its components (a JWK's
/// `n` and `e`), the others the key's bytes.
#[derive(Clone, Copy)]
enum Check {
    Rsa(&'static sig::RsaParameters),
    Bytes(&'static dyn sig::VerificationAlgorithm),
}

fn check(algorithm: Algorithm) -> Option<Check> {
    use Algorithm::*;
    Some(match algorithm {
        RS256 => Check::Rsa(&sig::RSA_PKCS1_2048_8192_SHA256),
        RS384 => Check::Rsa(&sig::RSA_PKCS1_2048_8192_SHA384),
        RS512 => Check::Rsa(&sig::RSA_PKCS1_2048_8192_SHA512),
        PS256 => Check::Rsa(&sig::RSA_PSS_2048_8192_SHA256),
        PS384 => Check::Rsa(&sig::RSA_PSS_2048_8192_SHA384),
        PS512 => Check::Rsa(&sig::RSA_PSS_2048_8192_SHA512),
        ES256 => Check::Bytes(&sig::ECDSA_P256_SHA256_FIXED),
        ES384 => Check::Bytes(&sig::ECDSA_P384_SHA384_FIXED),
        EdDSA => Check::Bytes(&sig::ED25519),
        _ => return None,
    })
}

/// Whether the bridge can check a signature of `algorithm`.
pub fn supports(algorithm: Algorithm) -> bool {
    check(algorithm).is_some()
}

struct RingVerifier {
    algorithm: Algorithm,
    check: Check,
    key: DecodingKey,
}

impl Verifier<Vec<u8>> for RingVerifier {
    fn verify(&self, message: &[u8], signature: &Vec<u8>) -> std::result::Result<(), SignatureError> {
        let checked = match (self.check, self.key.kind()) {
            (Check::Rsa(rsa), DecodingKeyKind::RsaModulusExponent { n, e }) => {
                sig::RsaPublicKeyComponents { n, e }.verify(rsa, message, signature)
            }
            (Check::Rsa(rsa), DecodingKeyKind::SecretOrDer(der)) => {
                sig::UnparsedPublicKey::new(rsa, der).verify(message, signature)
            }
            (Check::Bytes(algorithm), DecodingKeyKind::SecretOrDer(bytes)) => {
                sig::UnparsedPublicKey::new(algorithm, bytes).verify(message, signature)
            }
            (Check::Bytes(_), DecodingKeyKind::RsaModulusExponent { .. }) => Err(ring::error::Unspecified),
        };
        checked.map_err(|_| SignatureError::new())
    }
}

impl JwtVerifier for RingVerifier {
    fn algorithm(&self) -> Algorithm {
        self.algorithm
    }
}

fn verifier(algorithm: &Algorithm, key: &DecodingKey) -> Result<Box<dyn JwtVerifier>> {
    let check = check(*algorithm).ok_or(ErrorKind::InvalidAlgorithm)?;
    if key.family() != algorithm.family() {
        return Err(ErrorKind::InvalidKeyFormat.into());
    }
    Ok(Box::new(RingVerifier { algorithm: *algorithm, check, key: key.clone() }))
}

fn no_signer(_: &Algorithm, _: &EncodingKey) -> Result<Box<dyn JwtSigner>> {
    Err(ErrorKind::InvalidAlgorithm.into())
}

fn digest(data: &[u8], hash: ThumbprintHash) -> Result<Vec<u8>> {
    let algorithm = match hash {
        ThumbprintHash::SHA256 => &ring::digest::SHA256,
        ThumbprintHash::SHA384 => &ring::digest::SHA384,
        ThumbprintHash::SHA512 => &ring::digest::SHA512,
        _ => return Err(ErrorKind::InvalidAlgorithm.into()),
    };
    Ok(ring::digest::digest(algorithm, data).as_ref().to_vec())
}
