from mtaplugin.bounces import verp


def test_encode_names_the_member_in_the_bounce_address():
    assert (
        verp.encode("dev-bounces@lists.example.com", "anne@example.org")
        == "dev-bounces+anne=example.org@lists.example.com"
    )


def test_member_of_reads_back_what_encode_wrote():
    vaddr = verp.encode("dev-bounces@lists.example.com", "Bob=Jones@Example.ORG")
    extension = vaddr.split("@")[0].split("+", 1)[1]
    assert verp.member_of(extension) == "bob=jones@example.org"


def test_a_token_is_not_a_member():
    assert verp.member_of("3f9a0c1d2e") is None
    assert verp.member_of("=example.org") is None
    assert verp.member_of("anne=") is None


def test_encode_token():
    assert verp.encode_token("dev-bounces@h.example", "abc123") == "dev-bounces+abc123@h.example"
