// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/**
 * Test USD Coin (tUSDC): a stand-in for USDC on a local testnet (anvil), so
 * the service's wallet tiers can be exercised against a real chain: the server
 * reads balanceOf(address) and decimals() of this token with eth_call, as it
 * would read USDC's. Like USDC it has 6 decimals; unlike USDC, its owner (the
 * deployer) mints at will. It is NOT money: never deploy it to a real network.
 *
 * Built by scripts/testnet/build_test_usdc.ts into test_usdc.json.
 */
contract TestUsdc {
    string public constant name = "Test USD Coin";
    string public constant symbol = "tUSDC";
    uint8 public constant decimals = 6;

    /// The deployer: the only account that may mint.
    address public immutable owner;

    uint256 public totalSupply;
    mapping(address => uint256) public balanceOf;
    mapping(address => mapping(address => uint256)) public allowance;

    event Transfer(address indexed from, address indexed to, uint256 value);
    event Approval(address indexed owner, address indexed spender, uint256 value);

    constructor() {
        owner = msg.sender;
    }

    /// Creates `amount` units (1 tUSDC = 10^6 units) for `to`; owner only.
    function mint(address to, uint256 amount) external {
        require(msg.sender == owner, "tUSDC: only the owner can mint");
        require(to != address(0), "tUSDC: mint to the zero address");
        totalSupply += amount;
        balanceOf[to] += amount;
        emit Transfer(address(0), to, amount);
    }

    function transfer(address to, uint256 amount) external returns (bool) {
        _transfer(msg.sender, to, amount);
        return true;
    }

    function approve(address spender, uint256 amount) external returns (bool) {
        require(spender != address(0), "tUSDC: approve to the zero address");
        allowance[msg.sender][spender] = amount;
        emit Approval(msg.sender, spender, amount);
        return true;
    }

    function transferFrom(address from, address to, uint256 amount) external returns (bool) {
        uint256 allowed = allowance[from][msg.sender];
        require(allowed >= amount, "tUSDC: transfer amount exceeds allowance");
        // The usual ERC-20 convention: an allowance of 2^256-1 is unlimited and never spent.
        if (allowed != type(uint256).max) allowance[from][msg.sender] = allowed - amount;
        _transfer(from, to, amount);
        return true;
    }

    function _transfer(address from, address to, uint256 amount) private {
        require(to != address(0), "tUSDC: transfer to the zero address");
        uint256 held = balanceOf[from];
        require(held >= amount, "tUSDC: transfer amount exceeds balance");
        balanceOf[from] = held - amount;
        balanceOf[to] += amount;
        emit Transfer(from, to, amount);
    }
}
