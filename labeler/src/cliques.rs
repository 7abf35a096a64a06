//! Cliques in small undirected graphs (GPUs on one node), as 64-bit masks.
//!
//! The largest clique is found by branch and bound, pruned with a greedy
//! colouring, so it never lists cliques. Listing every maximal clique
//! (Bron–Kerbosch with pivoting) is for people and stops after
//! [`MAX_LISTED_CLIQUES`]: some graphs on 64 vertices have 2^32 of them (every
//! GPU linked to all but one, say), and the input is not trusted.

/// Most vertices a graph may have: one bit per vertex in a `u64`.
pub const MAX_VERTICES: usize = 64;

/// Most maximal cliques [`Graph::maximal_cliques`] lists.
pub const MAX_LISTED_CLIQUES: usize = 64;

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

    fn all_vertices(&self) -> u64 {
        if self.len() == MAX_VERTICES {
            u64::MAX
        } else {
            (1u64 << self.len()) - 1
        }
    }

    /// Every maximal clique, each as sorted vertex indices, in lexicographic
    /// order, or `None` when there are more than [`MAX_LISTED_CLIQUES`].
    /// Isolated vertices are cliques of one.
    pub fn maximal_cliques(&self) -> Option<Vec<Vec<usize>>> {
        let mut found = Vec::new();
        self.bron_kerbosch(0, self.all_vertices(), 0, &mut found);
        if found.len() > MAX_LISTED_CLIQUES {
            return None;
        }
        let mut cliques: Vec<Vec<usize>> = found.into_iter().map(vertices).collect();
        cliques.sort();
        Some(cliques)
    }

    /// Size of the largest clique; 0 for a graph without vertices.
    pub fn max_clique_size(&self) -> usize {
        let mut best = 0;
        self.grow_largest(0, self.all_vertices(), &mut best);
        best as usize
    }

    /// Branch and bound: extends `size` vertices by those in `candidates`
    /// (all adjacent to the clique so far), skipping a branch when even a
    /// colouring's bound cannot beat `best`.
    fn grow_largest(&self, size: u32, mut candidates: u64, best: &mut u32) {
        if candidates == 0 {
            *best = (*best).max(size);
            return;
        }
        while candidates != 0 {
            if size + self.colour_bound(candidates) <= *best {
                return;
            }
            let v = candidates.trailing_zeros() as usize;
            candidates &= !(1u64 << v);
            self.grow_largest(size + 1, candidates & self.adjacency[v], best);
        }
    }

    /// An upper bound on the largest clique within `vertices`: the colours a
    /// greedy colouring needs (a clique has one vertex of each colour).
    fn colour_bound(&self, mut vertices: u64) -> u32 {
        let mut colours = 0;
        while vertices != 0 {
            colours += 1;
            // One colour: a set of pairwise non-adjacent vertices.
            let mut open = vertices;
            while open != 0 {
                let v = open.trailing_zeros() as usize;
                vertices &= !(1u64 << v);
                open &= !(1u64 << v) & !self.adjacency[v];
            }
        }
        colours
    }

    fn bron_kerbosch(
        &self,
        clique: u64,
        mut candidates: u64,
        mut excluded: u64,
        out: &mut Vec<u64>,
    ) {
        if out.len() > MAX_LISTED_CLIQUES {
            return; // too many to list: the caller says so
        }
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
            cliques.unwrap(),
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
        assert_eq!(g.maximal_cliques(), Some(vec![(0..MAX_VERTICES).collect()]));
        assert!(Graph::new(MAX_VERTICES + 1).is_none());
    }

    /// 64 vertices, each linked to all but its partner: 2^32 maximal cliques
    /// of 32. The size comes at once; the listing gives up.
    #[test]
    fn a_graph_with_billions_of_cliques_is_answered_at_once() {
        let mut g = Graph::new(MAX_VERTICES).unwrap();
        for a in 0..MAX_VERTICES {
            for b in a + 1..MAX_VERTICES {
                if b != (a ^ 1) {
                    g.connect(a, b);
                }
            }
        }
        let started = std::time::Instant::now();
        assert_eq!(g.max_clique_size(), MAX_VERTICES / 2);
        assert_eq!(g.maximal_cliques(), None);
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
    }

    /// The bound never cuts the answer: branch and bound agrees with listing
    /// every maximal clique, on every graph of 6 vertices.
    #[test]
    fn branch_and_bound_agrees_with_listing_on_every_small_graph() {
        let pairs: Vec<(usize, usize)> = (0..6)
            .flat_map(|a| (a + 1..6).map(move |b| (a, b)))
            .collect();
        for edges in 0..1u32 << pairs.len() {
            let mut g = Graph::new(6).unwrap();
            for (i, &(a, b)) in pairs.iter().enumerate() {
                if edges & (1 << i) != 0 {
                    g.connect(a, b);
                }
            }
            let listed = g.maximal_cliques().unwrap();
            let largest = listed.iter().map(Vec::len).max().unwrap_or(0);
            assert_eq!(g.max_clique_size(), largest, "edges {edges:#x}");
        }
    }
}
