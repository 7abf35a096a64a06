//! Cliques in small undirected graphs (GPUs on one node), as 64-bit masks.
//!
//! Nodes hold at most a few dozen GPUs, so an exact Bron–Kerbosch search with
//! pivoting over bitmasks is instant and needs no heuristics.

/// Most vertices a graph may have: one bit per vertex in a `u64`.
pub const MAX_VERTICES: usize = 64;

/// An undirected graph given as one adjacency mask per vertex.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Graph {
    adjacency: Vec<u64>,
}

impl Graph {
    /// A graph on `n` vertices without edges, or `None` when `n` exceeds [`MAX_VERTICES`].
    pub fn new(n: usize) -> Option<Self> {
        (n <= MAX_VERTICES).then(|| Self {
            adjacency: vec![0; n],
        })
    }

    pub fn len(&self) -> usize {
        self.adjacency.len()
    }

    pub fn is_empty(&self) -> bool {
        self.adjacency.is_empty()
    }

    /// Adds the edge `a`–`b`; self-loops and out-of-range vertices are ignored.
    pub fn connect(&mut self, a: usize, b: usize) {
        if a == b || a >= self.len() || b >= self.len() {
            return;
        }
        self.adjacency[a] |= 1 << b;
        self.adjacency[b] |= 1 << a;
    }

    /// Every maximal clique, each as sorted vertex indices, in lexicographic order.
    /// Isolated vertices are cliques of one.
    pub fn maximal_cliques(&self) -> Vec<Vec<usize>> {
        let mut found = Vec::new();
        let all = if self.len() == MAX_VERTICES {
            u64::MAX
        } else {
            (1u64 << self.len()) - 1
        };
        self.bron_kerbosch(0, all, 0, &mut found);
        let mut cliques: Vec<Vec<usize>> = found.into_iter().map(vertices).collect();
        cliques.sort();
        cliques
    }

    /// Size of the largest clique; 0 for a graph without vertices.
    pub fn max_clique_size(&self) -> usize {
        self.maximal_cliques()
            .iter()
            .map(Vec::len)
            .max()
            .unwrap_or(0)
    }

    fn bron_kerbosch(
        &self,
        clique: u64,
        mut candidates: u64,
        mut excluded: u64,
        out: &mut Vec<u64>,
    ) {
        if candidates == 0 {
            if excluded == 0 {
                out.push(clique);
            }
            return;
        }
        // Pivot on the vertex with most candidate neighbours to prune branches.
        let pivot = vertices(candidates | excluded)
            .into_iter()
            .max_by_key(|&u| (self.adjacency[u] & candidates).count_ones())
            .unwrap_or(0);
        for v in vertices(candidates & !self.adjacency[pivot]) {
            let bit = 1u64 << v;
            let neighbours = self.adjacency[v];
            self.bron_kerbosch(
                clique | bit,
                candidates & neighbours,
                excluded & neighbours,
                out,
            );
            candidates &= !bit;
            excluded |= bit;
        }
    }
}

/// The vertex indices set in `mask`, ascending.
fn vertices(mask: u64) -> Vec<usize> {
    (0..MAX_VERTICES)
        .filter(|&i| mask & (1 << i) != 0)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn graph(n: usize, edges: &[(usize, usize)]) -> Graph {
        let mut g = Graph::new(n).unwrap();
        for &(a, b) in edges {
            g.connect(a, b);
        }
        g
    }

    /// DGX-1 hybrid cube mesh: two fully linked quads plus one cross link per GPU.
    const CUBE_MESH: &[(usize, usize)] = &[
        (0, 1),
        (0, 2),
        (0, 3),
        (1, 2),
        (1, 3),
        (2, 3),
        (4, 5),
        (4, 6),
        (4, 7),
        (5, 6),
        (5, 7),
        (6, 7),
        (0, 4),
        (1, 5),
        (2, 6),
        (3, 7),
    ];

    #[rstest]
    #[case::no_vertices(0, &[], 0)]
    #[case::isolated_vertices(4, &[], 1)]
    #[case::one_pair(4, &[(0, 1)], 2)]
    #[case::triangle_and_pair(5, &[(0, 1), (1, 2), (0, 2), (3, 4)], 3)]
    #[case::hybrid_cube_mesh(8, CUBE_MESH, 4)]
    fn max_clique_size(
        #[case] n: usize,
        #[case] edges: &[(usize, usize)],
        #[case] expected: usize,
    ) {
        assert_eq!(graph(n, edges).max_clique_size(), expected);
    }

    #[test]
    fn hybrid_cube_mesh_has_two_quads_and_four_cross_pairs() {
        let cliques = graph(8, CUBE_MESH).maximal_cliques();
        assert_eq!(
            cliques,
            vec![
                vec![0, 1, 2, 3],
                vec![0, 4],
                vec![1, 5],
                vec![2, 6],
                vec![3, 7],
                vec![4, 5, 6, 7],
            ]
        );
    }

    #[test]
    fn complete_graph_of_sixty_four_is_one_clique() {
        let mut g = Graph::new(MAX_VERTICES).unwrap();
        for a in 0..MAX_VERTICES {
            for b in a + 1..MAX_VERTICES {
                g.connect(a, b);
            }
        }
        assert_eq!(g.max_clique_size(), MAX_VERTICES);
        assert!(Graph::new(MAX_VERTICES + 1).is_none());
    }
}
