//! JSON text, read and written without building values: the scanner the
//! request is read with and the writer the answer (and the mutations) are
//! written with. Below the pipeline's stages: the request's reader, the
//! decision's patches, the answer and the cluster's reads all use it, and
//! it uses none of them.

pub mod scan;
pub mod write;
